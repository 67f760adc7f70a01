import Foundation
import Testing
import TouchgateTestSupport
@testable import TouchgateVault

/// The store's own layer over SQLite: values, rows, errors, transactions, the pool's
/// snapshots and the migrations' record.
@Suite("SQLite layer")
struct DatabaseLayerTests {
    private static func scratch() -> (directory: URL, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-sqlite-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return (directory, directory.appendingPathComponent("test.sqlite").path)
    }

    @Test("every value kind binds and reads back; NULL and a value of another kind read as nil or zero, never a trap")
    func values() throws {
        let (directory, path) = Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try DatabasePool(path: path)
        defer { try? pool.close() }
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE t (i, r, s, b, n)")
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                           arguments: [Int64.max, 2.5, "héllo \u{0}nul", Data([0, 1, 255]), nil])
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)", arguments: [true, 7, "", [UInt8](), Int32(-3)])
        }
        let rows = try pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM t ORDER BY rowid") }
        try #require(rows.count == 2)
        #expect(rows[0]["i"] as Int64 == .max && rows[0]["r"] as Double == 2.5)
        #expect(rows[0]["s"] as String == "héllo \u{0}nul" && rows[0]["b"] as Data == Data([0, 1, 255]))
        #expect(rows[0]["n"] as DatabaseValue == .null && (rows[0]["n"] as Int64?) == nil)
        #expect(rows[1][0] as Bool && rows[1]["R"] as Int == 7 && rows[1]["s"] as String == "")
        #expect(rows[1]["n"] as Int32 == -3 && rows[1].count == 5)
        // The wrong kind, NULL, a missing column: nil, or the zero value.
        #expect((rows[0]["s"] as Int64?) == nil && rows[0]["s"] as Int64 == 0)
        #expect(rows[0]["n"] as String == "" && rows[0]["missing"] as Data == Data() && rows[0][99] as DatabaseValue == .null)
        #expect(try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t WHERE i = ?", arguments: [Int64.max]) } == 1)
        #expect(try pool.read { db in try String.fetchAll(db, sql: "SELECT s FROM t ORDER BY rowid") } == ["héllo \u{0}nul", ""])
        #expect(try pool.read { db in try Int.fetchOne(db, sql: "SELECT n FROM t WHERE rowid = 1") } == nil)
    }

    @Test("errors carry SQLite's code and message; the wrong number of arguments is an error, not a guess")
    func errors() throws {
        let (directory, path) = Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try DatabasePool(path: path)
        defer { try? pool.close() }
        try pool.write { db in try db.execute(sql: "CREATE TABLE t (k TEXT PRIMARY KEY)") }
        let duplicate = #expect(throws: DatabaseError.self) {
            try pool.write { db in try db.execute(sql: "INSERT INTO t VALUES ('a'), ('a')") }
        }
        #expect(duplicate?.resultCode == DatabaseError.constraint && duplicate?.message?.contains("UNIQUE") == true)
        #expect(throws: DatabaseError.self) { try pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: []) } }
        #expect(throws: DatabaseError.self) { try pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: ["a", "b"]) } }
        #expect(throws: DatabaseError.self) { try pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM nowhere") } }
        // Nothing above was kept: each write rolled back.
        #expect(try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") } == 0)
        // A file that is not a database fails at the open.
        let junk = directory.appendingPathComponent("junk").path
        _ = FileManager.default.createFile(atPath: junk, contents: Data(repeating: 0x41, count: 4096))
        let notADatabase = #expect(throws: DatabaseError.self) { _ = try DatabaseQueue(path: junk) }
        #expect(notADatabase?.resultCode == 26)   // SQLITE_NOTADB
    }

    @Test("a write that throws leaves nothing; a read sees the last commit while a write is under way; a busy writer is reported as busy")
    func transactions() async throws {
        let (directory, path) = Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try DatabasePool(path: path)
        defer { try? pool.close() }
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE t (v INTEGER)")
            try db.execute(sql: "INSERT INTO t VALUES (1)")
        }
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try pool.write { db in
                try db.execute(sql: "UPDATE t SET v = 2")
                throw Stop()
            }
        }
        #expect(try pool.read { db in try Int.fetchOne(db, sql: "SELECT v FROM t") } == 1)
        // While the writer holds an uncommitted change, a reader sees the last commit.
        let seen = try pool.write { db -> Int? in
            try db.execute(sql: "UPDATE t SET v = 3")
            return try pool.read { reader in try Int.fetchOne(reader, sql: "SELECT v FROM t") }
        }
        #expect(seen == 1)
        #expect(try pool.read { db in try Int.fetchOne(db, sql: "SELECT v FROM t") } == 3)
        // Another connection holding the write lock: a 1 s wait, then SQLITE_BUSY.
        let other = try DatabaseQueue(path: path, busyTimeout: 1)
        let impatient = try DatabasePool(path: path, busyTimeout: 1)
        defer { try? impatient.close() }
        try other.inTransaction(.immediate) { _ in
            let busy = #expect(throws: DatabaseError.self) {
                try impatient.write { db in try db.execute(sql: "UPDATE t SET v = 4") }
            }
            #expect(busy?.resultCode == DatabaseError.busy)
            return .rollback
        }
        try other.close()
        #expect(throws: DatabaseError.self) { try other.inDatabase { _ in } }
    }

    @Test("a cursor reads rows one at a time and ends; several statements run as one script")
    func cursorAndScript() throws {
        let (directory, path) = Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let queue = try DatabaseQueue(path: path, create: true)
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2);")
            let cursor = try Row.fetchCursor(db, sql: "SELECT v FROM t WHERE v > ? ORDER BY v", arguments: [0])
            var seen: [Int64] = []
            while let row = try cursor.next() { seen.append(row[0]) }
            #expect(seen == [1, 2])
            #expect(try cursor.next() == nil)
        }
        try queue.close()
    }

    @Test("the migrations' record keeps the table and names every store made so far carries, so none runs twice")
    func migrationRecord() throws {
        let store = try TemporaryStore()
        let applied = try store.database.writer.read { db in try TouchgateDatabase.migrator.appliedIdentifiers(db) }
        #expect(DatabaseMigrator.table == "grdb_migrations")
        #expect(applied == ["v1-prints", "v2-vault", "v3-audit", "v4-audit-state", "v5-audit-public", "v6-audit-shipped",
                            "v7-audit-fleet-checkpoint", "v8-vault-item-kind", "v9-audit-item", "v10-vault-item-details",
                            "v11-vault-tpm"])
        // Opening again runs nothing: a migration run twice would fail (its tables exist).
        let again = try TouchgateDatabase(location: store.location)
        try again.closeConnections()
        // A migration that fails leaves no record and no half of itself.
        var migrator = DatabaseMigrator()
        migrator.registerMigration("broken") { db in
            try db.execute(sql: "CREATE TABLE half (v)")
            try db.execute(sql: "INSERT INTO nowhere VALUES (1)")
        }
        #expect(throws: DatabaseError.self) { try migrator.migrate(store.database.writer) }
        #expect(try store.database.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name = 'half'")
        } == 0)
    }
}
