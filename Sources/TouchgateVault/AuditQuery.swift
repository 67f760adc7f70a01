public import FoundationEssentials

/// Which audit records to read and in what order, for ``AuditLog/records(_:)``,
/// ``AuditLog/forEachRecord(_:_:)`` and ``AuditLog/count(_:)``.
///
/// Every condition given must hold; an empty list or `nil` places no condition. The
/// conditions run in SQL, so a six-year log is never read whole to show a few records.
public struct AuditQuery: Sendable, Equatable {
    /// The order records come back in. Both follow the chain (sequence numbers), not the
    /// wall clock, which can be set back.
    public enum Order: Sendable, Equatable {
        /// Lowest sequence number first, as stored.
        case oldestFirst
        /// Highest sequence number first.
        case newestFirst
    }

    /// Only records whose wall time is at or after this instant.
    public var since: Date?
    /// Only records whose wall time is before this instant.
    public var until: Date?
    /// Only records about the item with exactly this name.
    public var item: String?
    /// Only records of one of these events; empty for any event.
    public var events: [AuditEvent]
    /// Only records with one of these outcomes; empty for any outcome.
    public var outcomes: [AuditOutcome]
    /// At most this many of the matching records: always the most recent ones (like
    /// `journalctl -n` or `tail`), whatever ``order`` they are returned in. Below zero
    /// counts as zero.
    public var limit: Int?
    /// The order of the result.
    public var order: Order

    /// A query; the defaults select every record, oldest first.
    public init(since: Date? = nil, until: Date? = nil, item: String? = nil, events: [AuditEvent] = [],
                outcomes: [AuditOutcome] = [], limit: Int? = nil, order: Order = .oldestFirst) {
        self.since = since
        self.until = until
        self.item = item
        self.events = events
        self.outcomes = outcomes
        self.limit = limit
        self.order = order
    }

    /// The `WHERE` clause (empty when there is no condition) and its arguments, in order.
    var condition: (sql: String, arguments: StatementArguments) {
        var clauses: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        // With an item named, its own index (audit_item, newest first) reads its records
        // only; the unary plus keeps SQLite from taking the time index instead, which would
        // read every record of the period and sort them.
        let time = item == nil ? "wallTime" : "+wallTime"
        if let since {
            clauses.append("\(time) >= ?")
            arguments.append(since.timeIntervalSince1970)
        }
        if let until {
            clauses.append("\(time) < ?")
            arguments.append(until.timeIntervalSince1970)
        }
        if let item {
            clauses.append("item = ?")
            arguments.append(item)
        }
        if !events.isEmpty {
            clauses.append("event IN (" + Array(repeating: "?", count: events.count).joined(separator: ", ") + ")")
            arguments += events.map(\.rawValue)
        }
        if !outcomes.isEmpty {
            clauses.append("outcome IN (" + Array(repeating: "?", count: outcomes.count).joined(separator: ", ") + ")")
            arguments += outcomes.map(\.rawValue)
        }
        return (clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND "), StatementArguments(arguments))
    }
}
