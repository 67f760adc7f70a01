import ArgumentParser
import TouchgateService
import TouchgateWire

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
    @Option(help: .hidden) var kdf: KeyStretching = .moderate

    func run() async throws {
        let (input, kdf) = (passphrase.input(), kdf)
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.initialize(stretching: kdf,
                                                      interaction: TerminalInteraction(console: console, input: input))
            console.result("initialized", report, text: "Created the vault in \(report.directory). Next: touchgate unlock")
            return ExitStatus.success
        }
    }
}
