import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate passphrase`: passphrase management.
struct Passphrase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passphrase",
        abstract: "Manage the vault passphrase.", subcommands: [Change.self])

    /// `touchgate passphrase change`: re-wraps the vault key under a new passphrase.
    struct Change: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change",
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
        @Option(help: .hidden) var kdf: KeyStretching?

        func run() async throws {
            let current = passphrase.input()
            let newInput = newFileDescriptor.map { PassphraseInput(fileDescriptor: $0) } ?? current
            let kdf = kdf
            try await CommandRunner.run(json: common.json) { console in
                try await service.passphraseChange(
                    stretching: kdf, current: TerminalInteraction(console: console, input: current),
                    new: TerminalInteraction(console: console, input: newInput))
                console.result("changed", EmptyReport(), text: "Passphrase changed.")
                return ExitStatus.success
            }
        }
    }
}
