import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate policy`: lockout and session limits.
struct Policy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Show or change the lockout and session limits, and new passkeys' policy.",
        subcommands: [Show.self, Set.self])

    static func text(_ settings: SettingsReport) -> String {
        """
        lockout: after \(settings.lockoutThreshold) failed touches in a row, for \(StatusText.duration(settings.lockoutDurationSeconds))
        passphrase only: after \(settings.passphraseOnlyThreshold) failed touches since the passphrase
        session reuse: \(StatusText.duration(settings.sessionTimeoutSeconds)) after a touch, ended by \(StatusText.duration(settings.idleTimeoutSeconds)) idle
        run lease: \(settings.runLeaseSeconds == 0 ? "none (every touchgate run needs a touch)" : "the same run again within \(StatusText.duration(settings.runLeaseSeconds)), from the same processes, unless an item is --fresh")
        new passkeys: \(settings.passkeyPolicy == "biometry-current-set" ? "biometry-current-set (enrolling or removing a finger invalidates them)" : "biometry-any (any enrolled finger)")
        """
    }

    /// `touchgate policy show`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show the limits in force.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let settings = try await service.policyShow()
                console.result("policy", settings, text: Policy.text(settings))
                return ExitStatus.success
            }
        }
    }

    /// `touchgate policy set`.
    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change the limits (needs the passphrase; audited).",
            discussion: """
                Lockout threshold 1 to 20 failed touches; lockout duration 1 s to 24 h; session \
                (reuse) timeout 0 to 300 s (5 minutes, never more); idle timeout at most the session \
                timeout; run lease 0 (none, the default) to 900 s: how long `touchgate run` may run the \
                same approved command again, asked by the same processes, without a new touch (never \
                for an item stored with --fresh). Exit status 8 for a wrong passphrase (nothing \
                changes), 64 for a value out of range.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var passphrase: PassphraseOptions

        @Option(help: ArgumentHelp("Failed touches in a row that start a lockout.", valueName: "count"))
        var lockoutThreshold: Int?
        @Option(help: ArgumentHelp("How long a lockout lasts.", valueName: "seconds"))
        var lockoutDuration: Int?
        @Option(help: ArgumentHelp("How long a touch may be reused (at most 300).", valueName: "seconds"))
        var sessionTimeout: Int?
        @Option(help: ArgumentHelp("Idle time that ends the session (at most the session timeout).", valueName: "seconds"))
        var idleTimeout: Int?
        @Option(help: ArgumentHelp("How long an approved `touchgate run` may run again without a touch (0: never).",
                                   valueName: "seconds"))
        var runLease: Int?
        @Option(help: ArgumentHelp("The policy of passkeys made from now on: biometry-any (any enrolled finger) or "
                                   + "biometry-current-set (enrolling or removing a finger invalidates them).",
                                   valueName: "policy"))
        var passkeyPolicy: String?

        func validate() throws {
            if lockoutThreshold == nil && lockoutDuration == nil && sessionTimeout == nil && idleTimeout == nil && runLease == nil
                && passkeyPolicy == nil {
                throw ValidationError("give at least one of --lockout-threshold, --lockout-duration, --session-timeout, "
                                      + "--idle-timeout, --run-lease, --passkey-policy")
            }
        }

        func run() async throws {
            let input = passphrase.input()
            let change = SettingsChange(lockoutThreshold: lockoutThreshold, lockoutDurationSeconds: lockoutDuration,
                                        sessionTimeoutSeconds: sessionTimeout, idleTimeoutSeconds: idleTimeout,
                                        runLeaseSeconds: runLease, passkeyPolicy: passkeyPolicy)
            try await CommandRunner.run(json: common.json) { console in
                let settings = try await service.policySet(
                    change, interaction: TerminalInteraction(console: console, input: input))
                console.result("changed", settings, text: Policy.text(settings))
                return ExitStatus.success
            }
        }
    }
}
