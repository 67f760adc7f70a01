import Foundation
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

    /// Keeps "a" and "b" through the usual way (a stamp, then the values), as a request does.
    static func keepBoth(_ snapshots: StoreSnapshots) throws {
        let stamp = try snapshots.stamp()
        _ = try snapshots.value("a", at: stamp) { 1 }
        _ = try snapshots.value("b", at: stamp) { "b" }
    }

    @Test("what is served without a check is served only until anything in the store's directory changes: a commit by any connection, a mode changed, a file made, bytes written behind SQLite's back, the directory moved away or its parent replaced")
    func unchangedOnlyUntilTheDirectoryChanges() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-watch-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let location = StoreLocation(directory: root.appendingPathComponent("parent/store"))
        var database: TouchgateDatabase? = try TouchgateDatabase(location: location)
        let snapshots = database!.snapshots
        func served() -> Bool { snapshots.unchanged("a", as: Int.self, "b", as: String.self).map { $0 == (1, "b") } ?? false }

        #expect(!served(), "nothing kept yet")
        try Self.keepBoth(snapshots)
        #expect(served())
        #expect(served(), "reading changes nothing")
        // A value kept with a stamp that is equal again counts from now: still served.
        try Self.keepBoth(snapshots)
        #expect(served())

        // A commit through this process's own pool.
        try StateStore(database: database!).updateState("k") { $0 = Data([1]) }
        #expect(!served())
        try Self.keepBoth(snapshots)
        #expect(served())

        // A commit by another connection, as sqlite3 in another process makes.
        let other = try DatabaseQueue(path: location.databasePath)
        try other.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('x', x'00', 0)")
        }
        try other.close()
        #expect(!served())
        try Self.keepBoth(snapshots)
        #expect(served())

        // A mode changed (and changed back).
        chmod(location.databasePath, 0o644)
        chmod(location.databasePath, 0o600)
        #expect(!served())
        try Self.keepBoth(snapshots)

        // A file made beside the database.
        #expect(FileManager.default.createFile(atPath: location.directoryPath + "/planted", contents: Data([1])))
        #expect(!served())
        try Self.keepBoth(snapshots)

        // The same byte written back into the database file behind SQLite's back.
        let file = open(location.databasePath, O_RDWR)
        #expect(file >= 0)
        var byte: UInt8 = 0
        #expect(pread(file, &byte, 1, 100) == 1)
        #expect(pwrite(file, &byte, 1, 100) == 1)
        close(file)
        #expect(!served())
        try Self.keepBoth(snapshots)
        #expect(served())

        // The parent replaced: the watched directory itself sees nothing, its path now
        // names another directory.
        let parent = root.appendingPathComponent("parent").path
        #expect(rename(parent, parent + ".old") == 0)
        try FileManager.default.createDirectory(atPath: location.directoryPath, withIntermediateDirectories: true)
        #expect(!served())
        #expect(!served(), "and stays unserved while the path names another directory")
        try FileManager.default.removeItem(atPath: parent)
        #expect(rename(parent + ".old", parent) == 0)

        // The directory itself moved away.
        database = nil
        let fresh = try TouchgateDatabase(location: location)
        try Self.keepBoth(fresh.snapshots)
        #expect(fresh.snapshots.unchanged("a", as: Int.self, "b", as: String.self) != nil)
        #expect(rename(location.directoryPath, location.directoryPath + ".moved") == 0)
        #expect(fresh.snapshots.unchanged("a", as: Int.self, "b", as: String.self) == nil)
    }

    @Test("a value that failed to read is not kept")
    func failuresAreNotKept() throws {
        let store = try TemporaryStore()
        struct Failed: Error {}
        #expect(throws: Failed.self) { try store.database.snapshots.value("v") { () throws -> Int in throw Failed() } }
        #expect(try store.database.snapshots.value("v") { 9 } == 9)
    }
}
