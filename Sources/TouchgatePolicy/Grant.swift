import FoundationEssentials

/// Permission for one operation, with the reason it was given.
///
/// A grant holds no key material: the vault releases the item's key only on receiving
/// one, and for the one item and operation named.
public struct Grant: Hashable, Sendable {
    /// What was authorized.
    public var action: PolicyAuditEvent.Kind
    /// The item, for item operations.
    public var itemName: String?
    /// The factors the decision relied on (fresh or reused).
    public var factors: Set<AuthenticationFactor>
    /// The enrolled print that matched, when a fingerprint was used.
    public var matchedPrint: EnrolledPrintID?
    /// Whether the decision reused a session instead of asking the user.
    public var reusedSession: Bool
    /// When the decision was made.
    public var decidedAt: ClockReading
    /// Why access was granted, for logs and the audit record.
    public var reason: String

    /// Creates a grant.
    public init(
        action: PolicyAuditEvent.Kind, itemName: String?, factors: Set<AuthenticationFactor>,
        matchedPrint: EnrolledPrintID?, reusedSession: Bool, decidedAt: ClockReading, reason: String
    ) {
        self.action = action
        self.itemName = itemName
        self.factors = factors
        self.matchedPrint = matchedPrint
        self.reusedSession = reusedSession
        self.decidedAt = decidedAt
        self.reason = reason
    }
}
