/// The result of ``AuditLog/verify()``.
public enum AuditVerification: Sendable, Equatable, CustomStringConvertible {
    /// Every stored record checked out; `count` records were checked.
    case intact(count: Int)
    /// The first record that cannot be trusted, and why. Records before it are intact.
    case broken(at: Int64, reason: String)

    /// Whether the log is intact.
    public var isIntact: Bool {
        if case .intact = self { return true }
        return false
    }

    /// A one-line, human-readable form (never holds a secret).
    public var description: String {
        switch self {
        case let .intact(count): return "audit log intact: \(count) records"
        case let .broken(at, reason): return "audit log broken at record \(at): \(reason)"
        }
    }
}
