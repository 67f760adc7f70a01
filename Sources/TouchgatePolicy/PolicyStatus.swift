/// A snapshot of the policy state, for `touchgate status` and diagnostics.
public struct PolicyStatus: Hashable, Sendable {
    /// The lockout in force, if any.
    public var lockout: LockoutInfo?
    /// Failed matches since the last success or lockout end.
    public var consecutiveFailures: Int
    /// Failed matches since the last passphrase entry.
    public var cumulativeFailures: Int
    /// Why fingerprint-only access would need the passphrase first, or nil.
    public var passphraseRequirement: PassphraseRequirement?
    /// Whether a reuse session is live.
    public var sessionActive: Bool

    /// Creates a snapshot.
    public init(
        lockout: LockoutInfo?, consecutiveFailures: Int, cumulativeFailures: Int,
        passphraseRequirement: PassphraseRequirement?, sessionActive: Bool
    ) {
        self.lockout = lockout
        self.consecutiveFailures = consecutiveFailures
        self.cumulativeFailures = cumulativeFailures
        self.passphraseRequirement = passphraseRequirement
        self.sessionActive = sessionActive
    }
}
