/// What `touchgate migrate` did: the personal store moved into touchgated's.
public struct MigrationReport: Codable, Sendable, Equatable {
    /// The personal data directory the store came from.
    public var from: String
    /// The store's directory in touchgated's state directory.
    public var directory: String
    /// Secrets moved.
    public var items: Int
    /// Enrolled prints moved.
    public var prints: Int
    /// Audit records in the moved trail, the migration's own record included, all verified.
    public var auditRecords: Int
    /// Whether the personal copy was removed (after the moved one verified through the daemon).
    public var removed: Bool

    /// A report.
    public init(from: String, directory: String, items: Int, prints: Int, auditRecords: Int, removed: Bool) {
        self.from = from
        self.directory = directory
        self.items = items
        self.prints = prints
        self.auditRecords = auditRecords
        self.removed = removed
    }
}
