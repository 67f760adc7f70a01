import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

/// The tunable part of the policy (`touchgate policy set`), kept in the vault's state table.
///
/// Values are whole seconds. Lockout threshold 1…20, lockout duration 1 s…24 h, session
/// (reuse) timeout 0…300 s, idle timeout at most the session timeout; the rest of
/// ``PolicyConfiguration`` keeps its defaults.
struct PolicySettings: Codable, Equatable, Sendable {
    /// The state-table key.
    static let stateKey = "policy.settings"

    var lockoutThreshold = 3
    var lockoutDurationSeconds = 15 * 60
    var sessionTimeoutSeconds = 5 * 60
    var idleTimeoutSeconds = 2 * 60
    /// How long an approved `touchgate run` may run again, the same request from the same
    /// processes, without a new touch (``TouchgateService/approve(_:device:interaction:)``);
    /// nil or 0: never (the default). Absent from settings stored before it existed.
    var runLeaseSeconds: Int?
    /// The policy of passkeys made without one named (touchgated's and the agent's devices);
    /// nil: `biometry-any`. Absent from settings stored before it existed.
    var passkeyPolicy: String?

    /// The longest run lease: a few minutes, as a reuse window.
    static let maximumRunLeaseSeconds = 15 * 60

    /// The validated configuration.
    /// - Throws: ``ServiceError`` (usage) naming the value out of range.
    func configuration() throws -> PolicyConfiguration {
        let maximumSession = Int(PolicyConfiguration.maximumSessionTimeout.components.seconds)
        guard (0...maximumSession).contains(sessionTimeoutSeconds) else {
            throw ServiceError.usage("session timeout \(sessionTimeoutSeconds) s is out of range (0 to \(maximumSession) s)")
        }
        guard (0...Self.maximumRunLeaseSeconds).contains(runLeaseSeconds ?? 0) else {
            throw ServiceError.usage("run lease \(runLeaseSeconds ?? 0) s is out of range (0 to \(Self.maximumRunLeaseSeconds) s)")
        }
        if let passkeyPolicy { _ = try TouchgateService.passkeyPolicy(passkeyPolicy) }
        guard (0...sessionTimeoutSeconds).contains(idleTimeoutSeconds) else {
            throw ServiceError.usage("idle timeout \(idleTimeoutSeconds) s is out of range (0 to the session timeout, \(sessionTimeoutSeconds) s)")
        }
        do {
            return try PolicyConfiguration(
                lockoutThreshold: lockoutThreshold, lockoutDuration: .seconds(lockoutDurationSeconds),
                sessionTimeout: .seconds(sessionTimeoutSeconds), idleTimeout: .seconds(idleTimeoutSeconds))
        } catch {
            throw ServiceError.usage(error.description)
        }
    }

    /// The stored settings, or the defaults when none were set.
    /// - Throws: ``ServiceError`` (data error) when the stored value does not decode.
    static func load(_ store: StateStore) throws -> PolicySettings {
        guard let data = try store.state(stateKey) else { return PolicySettings() }
        do {
            return try JSONDecoder().decode(PolicySettings.self, from: data)
        } catch {
            throw ServiceError(.stateTampered, "the stored policy settings are damaged; run: touchgate repair")
        }
    }

    /// The stored settings; the defaults when they are absent, cannot be read or cannot
    /// be trusted. The defaults are the strictest settings a user could not loosen
    /// without the passphrase, so a damaged row never weakens the policy; the damage is
    /// reported by the checks that read the state itself.
    static func loadOrDefaults(_ store: StateStore) -> PolicySettings {
        (try? load(store)) ?? PolicySettings()
    }

    /// The validated configuration, or the defaults when these settings are out of range.
    var configurationOrDefaults: PolicyConfiguration {
        (try? configuration()) ?? .standard
    }

    /// The stored form.
    func encoded() throws -> Data {
        try JSONEncoder().encode(self)
    }

    /// What changed from `old`, for the audit record: `lockout-threshold 3 -> 2, …`.
    func changes(from old: PolicySettings) -> String {
        var parts: [String] = []
        func note(_ name: String, _ before: Int, _ after: Int) {
            if before != after { parts.append("\(name) \(before) -> \(after)") }
        }
        note("lockout-threshold", old.lockoutThreshold, lockoutThreshold)
        note("lockout-duration", old.lockoutDurationSeconds, lockoutDurationSeconds)
        note("session-timeout", old.sessionTimeoutSeconds, sessionTimeoutSeconds)
        note("idle-timeout", old.idleTimeoutSeconds, idleTimeoutSeconds)
        note("run-lease", old.runLeaseSeconds ?? 0, runLeaseSeconds ?? 0)
        if old.passkeyPolicy ?? "biometry-any" != passkeyPolicy ?? "biometry-any" {
            parts.append("passkey-policy \(old.passkeyPolicy ?? "biometry-any") -> \(passkeyPolicy ?? "biometry-any")")
        }
        return parts.isEmpty ? "unchanged" : parts.joined(separator: ", ")
    }
}
