/// What the policy core needs to know about a stored item (never its secret).
public struct ItemDescriptor: Hashable, Sendable {
    /// The item's name, as shown to the user and written to the audit log.
    public var name: String
    /// The access policy guarding it.
    public var policy: AccessPolicy
    /// The enrolled set the item was bound to when written; required when the policy
    /// references ``AccessPolicy/biometryCurrentSet``, ignored otherwise.
    public var boundEnrollmentState: EnrollmentState?
    /// Whether every access needs a new touch or passphrase entry (no session reuse).
    public var requiresFreshTouch: Bool

    /// Describes an item.
    public init(
        name: String, policy: AccessPolicy,
        boundEnrollmentState: EnrollmentState? = nil, requiresFreshTouch: Bool = false
    ) {
        self.name = name
        self.policy = policy
        self.boundEnrollmentState = boundEnrollmentState
        self.requiresFreshTouch = requiresFreshTouch
    }

    /// Whether the item can still be opened with the given enrolled set.
    ///
    /// An item whose policy references ``AccessPolicy/biometryCurrentSet`` is invalid
    /// for good once the enrolled set differs from the one it was bound to (or when it
    /// was never bound), even if its policy has a passphrase branch: the vault then
    /// destroys its key. Other items stay valid.
    public func validity(current: EnrollmentState) -> ItemValidity {
        guard policy.referencesCurrentSet else { return .valid }
        guard let bound = boundEnrollmentState else {
            return .invalidated(reason: "bound to the current finger set but no enrollment state was recorded")
        }
        guard bound == current else {
            return .invalidated(reason: "the enrolled fingers changed since the item was stored")
        }
        return .valid
    }
}

/// Whether an item can still be opened.
public enum ItemValidity: Hashable, Sendable {
    /// The item can be opened if its policy is satisfied.
    case valid
    /// The item can never be opened again; the vault should destroy its key.
    case invalidated(reason: String)
}

/// What is being done to an item.
public enum ItemOperation: String, Hashable, Sendable, Codable, CaseIterable {
    /// Reading the secret.
    case read
    /// Writing (creating or replacing) the secret.
    case write
    /// Deleting the item.
    case delete

    /// The audit event kind recording this operation.
    public var auditKind: PolicyAuditEvent.Kind {
        switch self {
        case .read: .itemRead
        case .write: .itemWrite
        case .delete: .itemDelete
        }
    }
}

/// A change to the enrolled set.
public enum EnrollmentChange: String, Hashable, Sendable, Codable {
    /// Adding a finger.
    case enroll
    /// Removing a finger.
    case delete

    /// The audit event kind recording this change.
    public var auditKind: PolicyAuditEvent.Kind {
        switch self {
        case .enroll: .fingerEnrolled
        case .delete: .fingerDeleted
        }
    }
}
