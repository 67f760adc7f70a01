/// Which programs a touch approved to read which items, for how long: the Secret
/// Service's per-application rule. The first read of an item by a program needs a touch
/// that names the program; the approval then lasts the reuse window (the session
/// timeout), measured on the monotonic clock of the boot it was made in.
///
/// A value type the service persists in the authenticated state; pure, so tests drive it
/// with a manual clock.
public struct ApplicationApprovals: Codable, Sendable, Equatable {
    /// One approval.
    public struct Entry: Codable, Sendable, Equatable {
        public var item: String
        public var executable: String
        public var approvedAt: MonotonicInstant
    }

    /// The approvals still kept, oldest first.
    public private(set) var entries: [Entry] = []
    /// The most kept: the oldest go first (each is a touch's worth, so a program that
    /// approves many items only makes the others ask again).
    public static let maximumEntries = 256

    public init() {}

    /// Whether `executable` was approved for `item` no longer than `window` before `now`
    /// (never across a restart of the machine).
    public func isApproved(item: String, executable: String, at now: MonotonicInstant, window: Duration) -> Bool {
        entries.contains { entry in
            guard entry.item == item, entry.executable == executable,
                  let elapsed = now.elapsed(since: entry.approvedAt) else { return false }
            return elapsed >= .zero && elapsed <= window
        }
    }

    /// Records that a touch at `now` approved `executable` for `item`, dropping what has
    /// expired by `now`.
    public mutating func approve(item: String, executable: String, at now: MonotonicInstant, window: Duration) {
        entries.removeAll { entry in
            if entry.item == item && entry.executable == executable { return true }
            guard let elapsed = now.elapsed(since: entry.approvedAt) else { return true }
            return elapsed < .zero || elapsed > window
        }
        entries.append(Entry(item: item, executable: executable, approvedAt: now))
        if entries.count > Self.maximumEntries { entries.removeFirst(entries.count - Self.maximumEntries) }
    }

    /// Forgets every approval of `item` (deleted, or its allowed programs changed).
    public mutating func forget(item: String) {
        entries.removeAll { $0.item == item }
    }
}
