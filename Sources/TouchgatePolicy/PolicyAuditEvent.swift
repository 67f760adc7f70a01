/// One record for the audit log: who did what, when, with what outcome and why.
///
/// Named apart from the vault's `AuditEvent` (the stored event name): the vault maps
/// ``kind`` to it by raw value and persists the rest.
///
/// Never holds a secret, passphrase or template: subjects are item names and print
/// identifiers. The vault persists and hash-chains these records.
public struct PolicyAuditEvent: Hashable, Sendable, Codable {
    /// When it happened (wall time for the reader, boot time for ordering).
    public var time: ClockReading
    /// Who acted (the principal the evaluator was created for, e.g. `uid=1000(alice)`).
    public var principal: String
    /// What happened.
    public var kind: Kind
    /// What it concerned: an item name or print identifier, if any.
    public var subject: String?
    /// The factor used, for authentication attempts.
    public var factor: AuthenticationFactor?
    /// How it ended.
    public var outcome: Outcome
    /// Why, in words (no secrets).
    public var reason: String

    /// Creates an event.
    public init(
        time: ClockReading, principal: String, kind: Kind, subject: String? = nil,
        factor: AuthenticationFactor? = nil, outcome: Outcome, reason: String
    ) {
        self.time = time
        self.principal = principal
        self.kind = kind
        self.subject = subject
        self.factor = factor
        self.outcome = outcome
        self.reason = reason
    }

    /// The kinds of recorded events; raw values are the stable stored names, the same
    /// dotted names the vault's audit log uses (`auth.attempt`, `item.read`, ...).
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        /// A fingerprint or passphrase check and its result.
        case authenticationAttempt = "auth.attempt"
        /// An item's secret was requested.
        case itemRead = "item.read"
        /// An item was created or replaced.
        case itemWrite = "item.write"
        /// An item was deleted.
        case itemDelete = "item.delete"
        /// A finger was enrolled (or its authorization decided).
        case fingerEnrolled = "finger.enroll"
        /// A finger was deleted (or its authorization decided).
        case fingerDeleted = "finger.delete"
        /// The session was ended on request, such as by `touchgate lock`.
        case lock = "vault.lock"
        /// The session ended by itself: idle for the idle timeout, past the session
        /// timeout, or the machine restarted (the reason says which).
        case sessionEnded = "session.end"
        /// The vault was unlocked with the passphrase.
        case unlock = "vault.unlock"
        /// A lockout began.
        case lockoutStarted = "lockout.start"
        /// A lockout ended (expired or lifted by the passphrase).
        case lockoutEnded = "lockout.end"
        /// An item's access policy was set or changed.
        case policyChanged = "policy.change"
    }

    /// How an event ended.
    public enum Outcome: String, Hashable, Sendable, Codable, CaseIterable {
        /// The action succeeded or access was granted; also a state change the system
        /// made by itself (lockout start or end, a session ending on idle).
        case success
        /// An authentication was attempted and failed.
        case failure
        /// Access was refused by policy without (or before) an attempt, e.g. during a lockout.
        case denied
        /// No verdict was reached: the reader was unplugged, unavailable, timed out,
        /// captured poorly, or the user cancelled. Not counted toward lockout.
        case error
    }
}
