import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate repair`: after state was edited outside touchgate, or the audit log wiped.
struct Repair: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Repair edited lockout/settings state or a wiped audit trail (needs the passphrase).",
        discussion: """
            Touchgate refuses every touch (exit 6, state-tampered) once its lockout counters, settings \
            or enrollment state were edited outside it, or its audit trail was wiped. `repair` asks \
            nothing when all is well. Otherwise, with the passphrase, it starts a new trail if the old one \
            is gone (its first record says so), clears the failure counters as a passphrase entry does, \
            sets the limits back to the defaults (run `touchgate policy set` again if you had changed \
            them), keeps the enrollment generation, and records what it found. No secret, print or \
            record that still verifies is deleted. Exit status 8 for a wrong passphrase (nothing changes).
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var passphrase: PassphraseOptions

    func run() async throws {
        let input = passphrase.input()
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.repair(interaction: TerminalInteraction(console: console, input: input))
            let text = report.repaired
                ? (["Repaired:"] + report.found.map { "  - \($0)" }
                    + (report.settingsReset ? ["  The lockout and session limits are back to the defaults."] : []))
                    .joined(separator: "\n")
                : "Nothing to repair: the state and the audit trail check out."
            console.result(report.repaired ? "repaired" : "intact", report, text: text)
            return ExitStatus.success
        }
    }
}
