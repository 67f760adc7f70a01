import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate init`: creates the vault under a new passphrase.
struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the vault, protected by a new passphrase.",
        discussion: """
            The passphrase is asked twice on the terminal (a mismatch can be retyped), or read once \
            from --passphrase-fd N; libpwquality refuses the weakest (exit 11) and warns about weak \
            ones. Fingerprints enrolled before are sealed into the vault, and the vault is left \
            unlocked, as after `touchgate unlock`.
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var passphrase: PassphraseOptions

    /// Argon2id cost; `minimum` is for tests only.
    @Option(help: .hidden) var kdf: KeyStretching = .moderate

    @Flag(help: "Bind the vault key to the TPM at once (see `touchgate tpm --help`); shows the recovery key once.")
    var tpm = false

    func run() async throws {
        let (input, kdf, tpm) = (passphrase.input(), kdf, tpm)
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.initialize(stretching: kdf, tpm: tpm,
                                                      interaction: TerminalInteraction(console: console, input: input))
            let recovery = report.recoveryKey.map {
                "\nThe vault key is bound to the TPM. Recovery key, shown only now; write it down and keep it "
                    + "away from this machine:\n\n    \($0)\n\nIf the TPM is cleared or replaced: touchgate tpm recover"
            } ?? ""
            console.result("initialized", report, text: "Created the vault in \(report.directory); it is unlocked. "
                           + "Keep the passphrase safe: it cannot be recovered." + recovery)
            return ExitStatus.success
        }
    }
}
