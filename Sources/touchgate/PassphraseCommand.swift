import ArgumentParser
import TouchgateVault

/// `touchgate passphrase`: passphrase management.
struct Passphrase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the vault passphrase.", subcommands: [Change.self])

    /// `touchgate passphrase change`: re-wraps the vault key under a new passphrase.
    struct Change: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the passphrase.",
            discussion: """
                Asks for the current passphrase, then the new one twice. With --passphrase-fd N both \
                are read from N, one line each (current first); --new-passphrase-fd M reads the new \
                one from M instead. Items, prints and an unlocked session are untouched. Exit status 8 \
                for a wrong current passphrase (nothing changes).
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var passphrase: PassphraseOptions

        @Option(name: .customLong("new-passphrase-fd"), help: ArgumentHelp(
            "Read the new passphrase from this file descriptor (default: the --passphrase-fd one).",
            valueName: "fd"))
        var newFileDescriptor: Int32?

        /// Argon2id cost for the new wrapping; `minimum` is for tests only.
        @Option(help: .hidden) var kdf: KDFChoice?

        func run() async throws {
            let current = passphrase.input()
            let newInput = newFileDescriptor.map { PassphraseInput(fileDescriptor: $0) } ?? current
            let kdf = kdf?.parameters
            try await CommandRunner.run(json: common.json) { console in
                let context = try VaultContext.open()
                let old = try current.passphrase(prompt: "Current passphrase: ")
                // Check before asking for the new one, so a typo is reported at once.
                do {
                    _ = try context.vault.unlock(passphrase: old)
                } catch VaultError.wrongPassphrase {
                    try context.record(.passphraseChange, .failure, reason: "wrong current passphrase")
                    throw VaultError.wrongPassphrase
                }
                let new = try newInput.newPassphrase(prompt: "New passphrase: ")
                try context.vault.changePassphrase(from: old, to: new, kdf: kdf)
                try context.record(.passphraseChange, .success,
                                   reason: "passphrase changed (\(try context.vault.kdfParameters()))")
                console.result([("result", "changed")], text: "Passphrase changed.")
                return Exit.success
            }
        }
    }
}
