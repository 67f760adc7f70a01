public import FoundationEssentials

/// Which audit records to show or export, and in what order: every condition given must
/// hold, and the defaults select every record, oldest first.
///
/// The request of `audit show` and `audit export` (and of the daemon's audit calls).
/// The service checks it: an unknown event or outcome, a negative limit or a `since`
/// not before `until` is a `usage` error.
public struct AuditFilter: Codable, Sendable, Equatable {
    /// The order records come in; both follow the chain's sequence numbers.
    public enum Order: String, Codable, Sendable {
        /// As stored: the lowest sequence number first.
        case oldestFirst = "oldest-first"
        /// The most recent record first.
        case newestFirst = "newest-first"
    }

    /// Only records written at or after this instant (wall clock).
    public var since: Date?
    /// Only records written before this instant (wall clock).
    public var until: Date?
    /// Only records about the item with exactly this name.
    public var item: String?
    /// Only these events (`item.read`, `session.end`, …); empty for every event.
    public var events: [String]
    /// Only these outcomes (`success`, `failure`, `denied`, `error`); empty for every outcome.
    public var outcomes: [String]
    /// At most this many matching records, always the most recent ones whatever the
    /// ``order`` (like `journalctl -n`); `nil` for all.
    public var limit: Int?
    /// The order of the answer.
    public var order: Order

    /// A filter; with no arguments, every record, oldest first.
    public init(since: Date? = nil, until: Date? = nil, item: String? = nil, events: [String] = [],
                outcomes: [String] = [], limit: Int? = nil, order: Order = .oldestFirst) {
        self.since = since
        self.until = until
        self.item = item
        self.events = events
        self.outcomes = outcomes
        self.limit = limit
        self.order = order
    }

    /// Reads a filter; absent keys keep their defaults (no condition, oldest first).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        since = try container.decodeIfPresent(Date.self, forKey: .since)
        until = try container.decodeIfPresent(Date.self, forKey: .until)
        item = try container.decodeIfPresent(String.self, forKey: .item)
        events = try container.decodeIfPresent([String].self, forKey: .events) ?? []
        outcomes = try container.decodeIfPresent([String].self, forKey: .outcomes) ?? []
        limit = try container.decodeIfPresent(Int.self, forKey: .limit)
        order = try container.decodeIfPresent(Order.self, forKey: .order) ?? .oldestFirst
    }

    private enum CodingKeys: String, CodingKey {
        case since, until, item, events, outcomes, limit, order
    }
}
