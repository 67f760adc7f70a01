import FoundationEssentials
import Synchronization
import TouchgatePolicy
public import TouchgateVault
#if canImport(Glibc)
import Glibc
#endif

/// Stores kept open across requests by a long-lived process (touchgated), so that a
/// request does not pay for opening SQLite, checking its migrations and warming its
/// connections every time.
///
/// The database connections are kept, and with them what reads derive from the store
/// until it changes (``TouchgateDatabase/snapshots``: `status` and `secret list` only).
/// Everything a decision checks about the store still happens on every request: the
/// directory and files are checked private, the audit log is opened (its key files read,
/// its head and seal checked) and the authenticated state is verified by each use case,
/// as when the store is opened afresh.
///
/// A kept store is used only while its database file is the one it opened (same device
/// and inode): a store directory removed, replaced or restored from a copy is opened
/// again, as in the personal mode. At most ``capacity`` stores stay open; the least
/// recently used goes first, ``sweep()`` closes those unused for ``idleTimeout``, and
/// ``forget(_:)`` closes one (on `lock`, around `migrate`). A store is never closed
/// under a request: a request holds its own reference and the connections close when
/// the last one goes.
///
/// The kept stores are only touched under their lock; GRDB's pool is thread-safe, so
/// concurrent requests of one user share it (its one writer serialises their commits).
public final class OpenStores: Sendable {
    private struct Entry {
        let database: TouchgateDatabase
        let file: FileIdentity
        var lastUse: Double
    }

    /// The most stores kept open at once.
    public let capacity: Int
    /// How long a store stays open without a request.
    public let idleTimeout: Duration
    // The stores kept open, by slot, only touched under their lock.
    private let open = Mutex<[String: Entry]>([:])

    public init(capacity: Int = 32, idleTimeout: Duration = .seconds(120)) {
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
    }

    /// The open database at `location`, opening (creating, migrating) it when none is
    /// kept or the kept one's file is no longer the file at that path.
    /// Also returns what the checks found, which stamps the store's snapshots.
    func database(at location: StoreLocation) throws -> (TouchgateDatabase, StoreLocation.PreparedFiles) {
        // The same checks as opening: the directory and its files private, the directory made if missing.
        let prepared = try location.prepare()
        let slot = Self.slot(location)
        let now = Self.now()
        let kept: TouchgateDatabase? = open.withLock { open in
            guard let entry = open[slot], let current = prepared.database, entry.file.isSameFile(as: current) else { return nil }
            open[slot]?.lastUse = now
            return entry.database
        }
        if let kept { return (kept, prepared) }
        let database = try TouchgateDatabase(location: location)
        // Opening may have made the file, and a migration may have replaced it.
        let opened = try location.prepare()
        guard let file = opened.database else { return (database, opened) }
        open.withLock { open in
            open[slot] = Entry(database: database, file: file, lastUse: now)
            while open.count > capacity, let oldest = open.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                open[oldest.key] = nil
            }
        }
        return (database, opened)
    }

    /// The database kept open at `location`, if any, as it is: no check, no open. For
    /// what ``StoreSnapshots/unchanged(_:as:_:as:)`` answers, which checks the store itself.
    func kept(at location: StoreLocation) -> TouchgateDatabase? {
        let slot = Self.slot(location)
        return open.withLock { $0[slot]?.database }
    }

    /// Closes the store at `location` if it is kept (its connections close once no request uses them).
    public func forget(_ location: StoreLocation) {
        let slot = Self.slot(location)
        open.withLock { $0[slot] = nil }
    }

    /// Closes the stores unused for ``idleTimeout``; returns how many.
    @discardableResult
    public func sweep() -> Int {
        let limit = Self.now() - idleTimeout.timeInterval
        return open.withLock { open in
            let idle = open.filter { $0.value.lastUse <= limit }.map(\.key)
            for slot in idle { open[slot] = nil }
            return idle.count
        }
    }

    /// Closes every store (the daemon stops).
    public func closeAll() {
        open.withLock { $0.removeAll() }
    }

    /// How many stores are open.
    public var count: Int { open.withLock { $0.count } }

    private static func slot(_ location: StoreLocation) -> String {
        location.standardizedPath
    }

    private static func now() -> Double {
        SystemClock.readBootTime().timeInterval
    }
}
