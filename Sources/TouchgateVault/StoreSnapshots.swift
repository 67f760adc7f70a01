import Foundation
import GRDB
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
    }

    private let path: String
    /// The files whose identity is part of the stamp (paths made once: this runs on every read).
    private let watched: [String]
    /// The connection that reads `data_version` (opened at the first use, read-only): one of
    /// its own, since the value changes only for commits made by other connections.
    private let watcher = Mutex<DatabaseQueue?>(nil)
    private let kept = Mutex<[String: (stamp: Stamp, value: any Sendable)]>([:])

    init(location: StoreLocation) {
        path = location.databasePath
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
            return value
        }
        let value = try make()
        kept.withLock { $0[name] = (stamp, value) }
        return value
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

    /// The store's stamp now.
    package func stamp() throws -> Stamp {
        let queue = try watcher.withLock { watcher in
            if let watcher { return watcher }
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(10)  // as the store's own connections wait
            let opened = try DatabaseQueue(path: path, configuration: configuration)
            watcher = opened
            return opened
        }
        // The pragma opens its own read transaction (SQLite compiles it with one); a cached
        // statement, since the parsing was most of its cost.
        let version = try queue.inDatabase { db in
            try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) ?? 0
        }
        return Stamp(dataVersion: version, files: watched.map { FileIdentity(path: $0) })
    }
}
