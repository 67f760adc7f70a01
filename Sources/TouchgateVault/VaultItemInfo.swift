public import FoundationEssentials
public import TouchgateBasics

/// What may be shown about a stored item without its key: never its value.
public struct VaultItemInfo: Sendable, Equatable {
    /// The item's name, unique per owner.
    public var name: String
    /// The vault user the item belongs to.
    public var owner: String
    /// What the item holds: a secret to release, or a key that only signs.
    public var kind: ItemKind = .secret
    /// The access-control policy, opaque to the vault (the policy core owns its grammar).
    public var policy: String
    /// Whether releasing it needs a fresh touch (no reuse window).
    public var freshTouch: Bool
    /// The enrollment-state digest the item is bound to, or `nil` when any enrolled finger will do.
    public var enrollmentDigest: [UInt8]?
    /// Whether its key was destroyed by an enrollment change: it can no longer be read.
    public var isInvalidated: Bool
    /// What the Secret Service shows of it beside its value (JSON the service owns; nil for
    /// items stored otherwise). Authenticated: an edit makes the item fail to open.
    public var details: String?
    /// When it was first stored.
    public var createdAt: Date
    /// When its value or policy last changed.
    public var updatedAt: Date
    /// The stored state this listing saw: pass it to ``ItemExpectation/version(_:)`` so that
    /// a write made on the strength of this listing fails if the item changed meanwhile.
    /// A value built with ``init(name:owner:policy:freshTouch:enrollmentDigest:isInvalidated:createdAt:updatedAt:)``
    /// matches no stored item.
    public internal(set) var version: ItemVersion

    /// A listing entry (vault internals and tests build these).
    public init(name: String, owner: String, policy: String, freshTouch: Bool, enrollmentDigest: [UInt8]?,
                isInvalidated: Bool, createdAt: Date, updatedAt: Date) {
        self.name = name
        self.owner = owner
        self.policy = policy
        self.freshTouch = freshTouch
        self.enrollmentDigest = enrollmentDigest
        self.isInvalidated = isInvalidated
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = .unknown
    }
}

/// A decrypted item: its description and its value in guarded memory.
public struct VaultItem: Sendable, CustomStringConvertible {
    /// Name, policy and dates.
    public var info: VaultItemInfo
    /// The secret, wiped when the last reference goes.
    public var value: SecretBytes

    /// Names the item; never shows the value.
    public var description: String { "VaultItem(\(info.name), \(value.count) bytes)" }
}
