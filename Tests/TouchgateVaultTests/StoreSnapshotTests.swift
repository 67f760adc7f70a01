import Foundation
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import TouchgateVault

/// What touchgated keeps of a store between requests is used again only while nothing
/// changed it: a commit by any connection of any process, or a file around it replaced.
@Suite("Store snapshots")
struct StoreSnapshotTests {
    /// Reads `name` through the snapshots, counting how often the store was actually read.
    final class Reads: @unchecked Sendable {
        var count = 0
    }

    static func read(_ store: TemporaryStore, _ reads: Reads) throws -> Int {
        try store.database.snapshots.value("count") {
            reads.count += 1
            return reads.count
        }
    }

    @Test("an unchanged store is read once; a commit through this process or another connection, a file replaced and a direct write to the database file are each seen at the next read")
    func changesAreSeen() throws {
        let store = try TemporaryStore()
        let state = StateStore(database: store.database)
        let reads = Reads()
        #expect(try Self.read(store, reads) == 1)
        #expect(try Self.read(store, reads) == 1, "nothing changed: the kept value")
        #expect(try Self.read(store, reads) == 1)

        // A commit through this process's own pool.
        try state.updateState("k") { $0 = Data([1]) }
        #expect(try Self.read(store, reads) == 2)
        #expect(try Self.read(store, reads) == 2)

        // A commit by another connection, as sqlite3 in another process makes.
        let other = try DatabaseQueue(path: store.location.databasePath)
        try other.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('x', x'00', 0)")
        }
        try other.close()
        #expect(try Self.read(store, reads) == 3)

        // A file around the database replaced (the audit key written anew).
        let key = AuditKey.path(in: store.location)
        #expect(FileManager.default.createFile(atPath: key, contents: Data(repeating: 7, count: 32),
                                               attributes: [.posixPermissions: 0o600]))
        #expect(try Self.read(store, reads) == 4)
        #expect(try Self.read(store, reads) == 4)

        // Bytes written into the database file behind SQLite's back, even the same bytes it
        // already held (no commit, no data_version change): the file's times move.
        let file = open(store.location.databasePath, O_RDWR)
        #expect(file >= 0)
        var byte: UInt8 = 0
        #expect(pread(file, &byte, 1, 100) == 1)
        usleep(10_000)
        #expect(pwrite(file, &byte, 1, 100) == 1)
        close(file)
        #expect(try Self.read(store, reads) == 5)
        #expect(try Self.read(store, reads) == 5)

        // Forgotten on purpose.
        store.database.snapshots.forgetAll()
        #expect(try Self.read(store, reads) == 6)
    }

    @Test("a value that failed to read is not kept")
    func failuresAreNotKept() throws {
        let store = try TemporaryStore()
        struct Failed: Error {}
        #expect(throws: Failed.self) { try store.database.snapshots.value("v") { () throws -> Int in throw Failed() } }
        #expect(try store.database.snapshots.value("v") { 9 } == 9)
    }
}
