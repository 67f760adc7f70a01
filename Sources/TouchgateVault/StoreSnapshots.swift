import FoundationEssentials
import Synchronization

/// Values a long-lived process derives from one store and keeps until the store changes:
/// touchgated's `status` and `secret list` answer from them instead of reading and
/// re-verifying the same rows, key files and audit head on every request.
///
/// A value is kept with the store's ``Stamp`` when it was read, and used again only while
/// the stamp is the same. The stamp changes with every commit to the database by any
/// connection of any process (SQLite's `data_version`, read on a connection of its own),
/// and with any change to the files around it: the directory (a file added, removed or
/// renamed), the database file and its write-ahead log, the audit key and the signing key
/// (replaced, written, chmod'ed). Nothing that decides is served from here: a touch, a release, an unlock
/// and every change read and verify the store as always.
package final class StoreSnapshots: Sendable {
    /// What identifies the store's contents at one moment.
    package struct Stamp: Equatable, Sendable {
        let dataVersion: Int64
        let files: [FileIdentity?]
        /// The directory watch's count when the stamp was taken (before the rest of it);
        /// nil without a watch. Not part of the comparison: it only serves ``unchanged(_:as:_:as:)``.
        var changes: UInt64? = nil

        package static func == (left: Stamp, right: Stamp) -> Bool {
            left.dataVersion == right.dataVersion && left.files == right.files
        }
    }

    private let path: String
    /// The files whose identity is part of the stamp (paths made once: this runs on every read).
    private let watched: [String]
    /// The connection that reads `data_version` (opened at the first use, read-only): one of
    /// its own, since the value changes only for commits made by other connections.
    private let watcher = Mutex<DatabaseQueue?>(nil)
    private let kept = Mutex<[String: (stamp: Stamp, value: any Sendable)]>([:])
    /// The watch on the store's directory, made at the first stamp (nil inside when inotify
    /// cannot watch it).
    private let watch = Mutex<StoreWatch??>(nil)
    private let directoryPath: String

    init(location: StoreLocation) {
        path = location.databasePath
        directoryPath = location.directoryPath
        // The first three in the order of ``StoreLocation/PreparedFiles``, which `stamp` may use instead.
        watched = [location.directoryPath, path, path + "-wal", AuditKey.path(in: location),
                   AuditSigner.path(in: location)]
    }

    /// The value kept under `name` when the store has not changed since it was made; else
    /// `make()`'s, kept for next time. The stamp is taken before `make` runs, so a change
    /// made meanwhile is seen at the next call.
    /// A request that reads several values takes the ``stamp()`` once and passes it as `at`.
    package func value<T: Sendable>(_ name: String, at taken: Stamp? = nil, _ make: () throws -> T) throws -> T {
        let stamp = try taken ?? self.stamp()
        if let known = kept.withLock({ $0[name] }), known.stamp == stamp, let value = known.value as? T {
            // Still right now: ``unchanged(_:as:_:as:)`` may serve it until the directory next changes.
            if let changes = stamp.changes {
                kept.withLock { kept in
                    guard var entry = kept[name], entry.stamp == stamp else { return }
                    entry.stamp.changes = max(entry.stamp.changes ?? 0, changes)
                    kept[name] = entry
                }
            }
            return value
        }
        let value = try make()
        kept.withLock { $0[name] = (stamp, value) }
        return value
    }

    /// The values kept under `first` and `second` if nothing in the store's directory
    /// changed since their stamps were taken (``StoreWatch``: one read, one `lstat`); else
    /// nil, and the caller takes the usual way (``value(_:at:_:)``). Nil too where the
    /// directory cannot be watched.
    package func unchanged<A: Sendable, B: Sendable>(_ first: String, as firstType: A.Type, _ second: String,
                                                     as secondType: B.Type) -> (A, B)? {
        let (one, other) = kept.withLock { ($0[first], $0[second]) }
        guard let one, let other, let oneCount = one.stamp.changes, let otherCount = other.stamp.changes,
              let oneValue = one.value as? A, let otherValue = other.value as? B,
              let watch = watch.withLock({ $0 ?? nil }) else { return nil }
        let now = watch.count()
        return oneCount == now && otherCount == now ? (oneValue, otherValue) : nil
    }

    /// The value last kept under `name`, however old the store has grown since: a hint only,
    /// for a caller that checks what it names against the store before relying on it.
    package func lastKept<T: Sendable>(_ name: String) -> T? {
        kept.withLock { $0[name]?.value as? T }
    }

    /// Keeps `value` under `name` whatever the store's state: for a caller that keeps its
    /// own key with each entry (the rows it was made from) and checks it at every use.
    package func keep<T: Sendable>(_ name: String, _ value: T) {
        kept.withLock { $0[name] = (Stamp(dataVersion: -1, files: []), value) }
    }

    /// The audit log's keys as ``AuditLog/opened(in:)`` read them, with the identity of
    /// their files then, and the seal it signed last.
    let openedAudit = Mutex<(keyFiles: [FileIdentity?], key: AuditKey, signer: AuditSigner, sealMemo: SealMemo)?>(nil)

    /// Forgets every kept value (the next request reads the store afresh).
    package func forgetAll() {
        kept.withLock { $0.removeAll() }
        openedAudit.withLock { $0 = nil }
    }

    /// The store's stamp now. `prepared`, what ``StoreLocation/prepare()`` found at the
    /// start of this request, stands for the directory, database and log files: read
    /// before `data_version`, it can only be older than it, so a change it misses is seen
    /// at the next request, never hidden from it.
    package func stamp(prepared: StoreLocation.PreparedFiles? = nil) throws -> Stamp {
        let queue = try watcher.withLock { watcher in
            if let watcher { return watcher }
            // Waits for a lock as the store's own connections do (10 s).
            let opened = try DatabaseQueue(path: path, readOnly: true)
            watcher = opened
            return opened
        }
        // After the connection above is open (opening one writes the shared-memory file),
        // before anything else is read.
        let changes = watch.withLock { watch in
            if watch == nil { watch = .some(StoreWatch(directoryPath: directoryPath)) }
            return watch!
        }?.count()
        // The pragma opens its own read transaction (SQLite compiles it with one); a cached
        // statement, since the parsing was most of its cost.
        let version = try queue.inDatabase { db in
            try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0
        }
        guard let prepared else {
            return Stamp(dataVersion: version, files: watched.map { FileIdentity(path: $0) }, changes: changes)
        }
        return Stamp(dataVersion: version,
                     files: [prepared.directory, prepared.database, prepared.log] + watched[3...].map { FileIdentity(path: $0) },
                     changes: changes)
    }
}
