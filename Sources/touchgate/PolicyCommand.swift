import ArgumentParser
import TouchgatePolicy
import TouchgateVault

/// `touchgate policy`: lockout and session limits.
struct Policy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or change the lockout and session limits.",
        subcommands: [Show.self, Set.self])

    static func fields(_ settings: PolicySettings) -> [(String, JSON)] {
        [("lockout-threshold", .int(settings.lockoutThreshold)),
         ("lockout-duration-seconds", .int(settings.lockoutDurationSeconds)),
         ("session-timeout-seconds", .int(settings.sessionTimeoutSeconds)),
         ("idle-timeout-seconds", .int(settings.idleTimeoutSeconds)),
         ("passphrase-only-threshold", .int(PolicyConfiguration.standard.passphraseOnlyThreshold))]
    }

    static func text(_ settings: PolicySettings) -> String {
        """
        lockout: after \(settings.lockoutThreshold) failed touches in a row, for \(settings.lockoutDurationSeconds) s
        passphrase only: after \(PolicyConfiguration.standard.passphraseOnlyThreshold) failed touches since the passphrase
        session reuse: \(settings.sessionTimeoutSeconds) s after a touch, ended by \(settings.idleTimeoutSeconds) s idle
        """
    }

    /// `touchgate policy show`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the limits in force.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let settings = try VaultContext.open().settings
                console.result(Policy.fields(settings), text: Policy.text(settings))
                return Exit.success
            }
        }
    }

    /// `touchgate policy set`.
    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the limits (needs the passphrase; audited).",
            discussion: """
                Lockout threshold 1 to 20 failed touches; lockout duration 1 s to 24 h; session \
                (reuse) timeout 0 to 300 s (5 minutes, never more); idle timeout at most the session \
                timeout. Exit status 8 for a wrong passphrase (nothing changes), 64 for a value out of range.
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

        func validate() throws {
            if lockoutThreshold == nil && lockoutDuration == nil && sessionTimeout == nil && idleTimeout == nil {
                throw ValidationError("give at least one of --lockout-threshold, --lockout-duration, --session-timeout, --idle-timeout")
            }
        }

        func run() async throws {
            let input = passphrase.input()
            let (threshold, duration, session, idle) = (lockoutThreshold, lockoutDuration, sessionTimeout, idleTimeout)
            try await CommandRunner.run(json: common.json) { console in
                let context = try VaultContext.open()
                var settings = context.settings
                settings.lockoutThreshold = threshold ?? settings.lockoutThreshold
                settings.lockoutDurationSeconds = duration ?? settings.lockoutDurationSeconds
                settings.sessionTimeoutSeconds = session ?? settings.sessionTimeoutSeconds
                // Lowering the session timeout lowers an idle timeout above it.
                settings.idleTimeoutSeconds = idle ?? min(settings.idleTimeoutSeconds, settings.sessionTimeoutSeconds)
                _ = try settings.configuration()
                let change = settings.changes(from: context.settings)
                do {
                    try context.checkPassphrase(input, purpose: "change the policy")
                } catch {
                    try context.record(.policyChange, .denied, reason: "refused (\(change)): passphrase not verified")
                    throw error
                }
                try settings.save(context.stateStore)
                try context.record(.policyChange, .success, reason: change)
                console.result([("result", "changed")] + Policy.fields(settings), text: Policy.text(settings))
                return Exit.success
            }
        }
    }
}
