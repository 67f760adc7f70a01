import ArgumentParser
import TouchgateClient
import TouchgateAPI
import TouchgateTerminal

/// `touchgate migrate`: moves the personal (in-process) store into touchgated's.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Move your personal vault, prints and audit trail into touchgated.",
        discussion: """
            For when touchgated was installed after you made a vault without it. The store in \
            $XDG_DATA_HOME/touchgate (~/.local/share/touchgate) is handed to touchgated, which asks \
            for the vault's passphrase, verifies the audit trail and continues it with a \
            vault.migrate record. Once the moved vault verifies through touchgated (audit verify, \
            the same secrets listed), the personal files are removed and its key leaves your \
            keyring; until then they are left as they were, whatever goes wrong. Exit status 10 \
            when there is no personal vault, 9 when touchgated already holds a vault for you, \
            8 for a wrong passphrase, 75 when touchgated is not running.
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var passphrase: PassphraseOptions

    func run() async throws {
        let input = passphrase.input()
        try await CommandRunner.run(json: common.json) { console in
            guard let daemon = service as? DaemonClient, daemon.mode == .system else {
                throw ServiceError(.daemonUnavailable, "touchgated is not running (no socket at "
                                       + "\(ServiceChoice.systemSocket)), so there is nowhere to move the vault; "
                                       + "install and start it (see docs/DAEMON.md), then run "
                                       + "touchgate migrate again")
            }
            let report = try await ServiceChoice.requiredHost
                .migrate(into: daemon, interaction: TerminalInteraction(console: console, input: input))
            console.result("migrated", report, text: """
                Moved \(report.items) secret\(report.items == 1 ? "" : "s") and \(report.prints) print\
                \(report.prints == 1 ? "" : "s") into touchgated; the audit trail (\(report.auditRecords) records) \
                verifies there. The personal copy at \(report.from) was removed.
                """)
            return ExitStatus.success
        }
    }
}
