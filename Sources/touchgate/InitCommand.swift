import ArgumentParser
import TouchgateVault

/// `touchgate init`: creates the vault under a new passphrase.
struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the vault, protected by a new passphrase.",
        discussion: """
            The passphrase is asked twice on the terminal, or read (once) from --passphrase-fd N. \
            Fingerprints enrolled before are sealed into the vault. Run `touchgate unlock` next.
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var passphrase: PassphraseOptions

    /// Argon2id cost; `minimum` is for tests only.
    @Option(help: .hidden) var kdf: KDFChoice = .moderate

    func run() async throws {
        let input = passphrase.input()
        let kdf = kdf.parameters
        try await CommandRunner.run(json: common.json) { console in
            let database = try Storage.database()
            if try Vault.exists(in: database) {
                throw VaultError.alreadyInitialized(directory: database.location.directory.path)
            }
            let secret = try input.newPassphrase(prompt: "New vault passphrase: ")
            let vault = try Vault.create(database: database, passphrase: secret, kdf: kdf)
            let context = try VaultContext.open(database: database)
            try context.record(.vaultInit, .success, reason: "vault created (\(kdf))")
            console.result([("result", "initialized"), ("directory", .string(database.location.directory.path)),
                            ("owner", .string(vault.owner))],
                           text: "Created the vault in \(database.location.directory.path). Next: touchgate unlock")
            return Exit.success
        }
    }
}

extension KDFChoice {
    /// The Argon2id parameters.
    var parameters: KDFParameters {
        switch self {
        case .moderate: .moderate
        case .minimum: .minimum
        }
    }
}
