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
        /// Made with no reuse window: it stands for one use (``consume(item:executable:at:)``)
        /// within ``ApplicationApprovals/singleUseLifetime``, not for a window. Nil in entries
        /// written before it existed.
        public var singleUse: Bool?

        /// How long it stands when `window` is the reuse window.
        func lifetime(_ window: Duration) -> Duration {
            singleUse == true ? Swift.max(window, ApplicationApprovals.singleUseLifetime) : window
        }
    }

    /// How long an approval made with no reuse window waits for its one use: a program asks
    /// to unlock an item (the touch) and reads it in a call of its own right after.
    public static let singleUseLifetime = Duration.seconds(30)

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
            return elapsed >= .zero && elapsed <= entry.lifetime(window)
        }
    }

    /// Spends the single-use approval of `executable` for `item` (made with no reuse window)
    /// if one stands at `now`; true when one did. A window's approvals are not spent.
    public mutating func consume(item: String, executable: String, at now: MonotonicInstant) -> Bool {
        guard let index = entries.firstIndex(where: { $0.item == item && $0.executable == executable && $0.singleUse == true })
        else { return false }
        let entry = entries.remove(at: index)
        guard let elapsed = now.elapsed(since: entry.approvedAt) else { return false }
        return elapsed >= .zero && elapsed <= Self.singleUseLifetime
    }

    /// Records that a touch at `now` approved `executable` for `item`, dropping what has
    /// expired by `now`. With no reuse window (`window` zero) and `singleUseWithoutWindow`,
    /// the approval stands for one use instead (``consume(item:executable:at:)``).
    public mutating func approve(item: String, executable: String, at now: MonotonicInstant, window: Duration,
                                 singleUseWithoutWindow: Bool = false) {
        entries.removeAll { entry in
            if entry.item == item && entry.executable == executable { return true }
            guard let elapsed = now.elapsed(since: entry.approvedAt) else { return true }
            return elapsed < .zero || elapsed > entry.lifetime(window)
        }
        let singleUse = singleUseWithoutWindow && window <= .zero
        entries.append(Entry(item: item, executable: executable, approvedAt: now, singleUse: singleUse ? true : nil))
        if entries.count > Self.maximumEntries { entries.removeFirst(entries.count - Self.maximumEntries) }
    }

    /// Forgets every approval of `item` (deleted, or its allowed programs changed).
    public mutating func forget(item: String) {
        entries.removeAll { $0.item == item }
    }
}
