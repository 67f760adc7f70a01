import ArgumentParser
import FingerprintKit
import TouchgatePolicy
import TouchgateVault

/// `touchgate status`: locked or not, session, lockout, enrolled fingers, readers.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether the vault is locked, the session, lockout, enrolled fingers and readers.",
        discussion: """
            Reads state only: it never asks for a finger or the passphrase, and does not count as \
            use (it does not delay the idle lock).
            """)

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            let database = try Storage.database()
            let enrolled = try Storage.printIndex(database: database).prints()
            let readers = await FingerprintContext().readers().map(\.info)
            var fields: [(String, JSON)] = []
            var lines: [String] = []
            if try Vault.exists(in: database) {
                let context = try VaultContext.open(database: database)
                let unlocked = context.isUnlocked
                let policy = try context.evaluator.status()
                let state = try VaultPolicyStateStore(store: context.stateStore).read()
                let remaining = Self.sessionRemaining(state, context.evaluator.configuration,
                                                      now: context.evaluator.clock.monotonicNow)
                let lockout = policy.lockout
                fields += [
                    ("initialized", true), ("locked", .bool(!unlocked)),
                    ("session", .object([("active", .bool(remaining != nil)),
                                         ("remaining-seconds", remaining.map { .int(Int($0.components.seconds)) } ?? .null)])),
                    ("lockout", .object([
                        ("locked-out", .bool(lockout != nil)),
                        ("remaining-seconds", lockout?.remaining.map { .int(Int($0.components.seconds)) } ?? .null),
                        ("passphrase-only", .bool(lockout?.passphraseOnly ?? false)),
                        ("consecutive-failures", .int(policy.consecutiveFailures)),
                        ("cumulative-failures", .int(policy.cumulativeFailures)),
                        ("threshold", .int(context.settings.lockoutThreshold)),
                    ])),
                    ("passphrase-required", policy.passphraseRequirement.map { .string(Self.name($0)) } ?? .null),
                    ("items", .int(try context.vault.items().count)),
                ]
                lines.append("vault: \(unlocked ? "unlocked" : "locked (run: touchgate unlock)")")
                lines.append("session: " + (remaining.map { "active, \($0.components.seconds) s left" } ?? "none"))
                if let lockout {
                    lines.append("lockout: " + (lockout.passphraseOnly
                        ? "until the passphrase is entered"
                        : "\(lockout.remaining?.components.seconds ?? 0) s left"))
                } else {
                    lines.append("lockout: none")
                }
                lines.append("failures: \(policy.consecutiveFailures) in a row (lockout at \(context.settings.lockoutThreshold)), "
                             + "\(policy.cumulativeFailures) since the passphrase")
                if let requirement = policy.passphraseRequirement {
                    lines.append("passphrase: needed before a fingerprint alone opens anything (\(Self.name(requirement)))")
                }
            } else {
                fields.append(("initialized", false))
                lines.append("vault: none yet (run: touchgate init)")
            }
            fields.append(("enrolled", .array(enrolled.map { print in
                .object([("user", .string(print.user)), ("finger", .string(print.finger)),
                         ("driver", .string(print.driver)), ("device-id", .string(print.deviceID))])
            })))
            fields.append(("readers", .array(readers.map(Devices.json))))
            lines.append("enrolled: " + (enrolled.isEmpty ? "none" : enrolled.map { "\($0.finger) of \($0.user)" }
                .joined(separator: ", ")))
            lines.append("readers: " + (readers.isEmpty ? "none" : readers.map { "\($0.name) (\($0.deviceID))" }
                .joined(separator: ", ")))
            console.result(fields, text: lines.joined(separator: "\n"))
            return Exit.success
        }
    }

    /// Time left in the reuse session: the earlier of the idle limit and the session limit
    /// from the latest proof; nil when there is no session.
    static func sessionRemaining(_ state: PolicyState, _ configuration: PolicyConfiguration,
                                 now: MonotonicInstant) -> Duration? {
        guard let session = state.session, let idle = now.elapsed(since: session.lastActivity) else { return nil }
        let sinceProof = [session.biometry?.matchedAt, session.passphraseVerifiedAt]
            .compactMap { $0.flatMap { now.elapsed(since: $0) } }.min()
        guard let sinceProof else { return nil }
        let left = min(configuration.idleTimeout - idle, configuration.sessionTimeout - sinceProof)
        return left > .zero ? left : nil
    }

    static func name(_ requirement: PassphraseRequirement) -> String {
        switch requirement {
        case .notEnteredSinceBoot: "not-entered-since-boot"
        case .expired: "expired"
        case .enrollmentChange: "enrollment-change"
        case .requiredByPolicy: "required-by-policy"
        }
    }
}
