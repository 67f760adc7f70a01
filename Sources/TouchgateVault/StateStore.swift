import Foundation
import GRDB

/// Small named blobs other layers persist across processes (lockout counters, session state).
///
/// Each update runs in one `BEGIN IMMEDIATE` transaction: writers in this process are
/// serialized by GRDB, writers in other processes by SQLite's lock and the database's
/// busy timeout, so a read-modify-write through ``updateState(_:_:)`` never loses an
/// update. Works with or without a vault; the values are stored as given (not
/// encrypted): never put a secret in them. Keys starting with `vault.` are the vault's.
public struct StateStore: Sendable {
    private let database: TouchgateDatabase

    /// A store over `database`.
    public init(database: TouchgateDatabase) {
        self.database = database
    }

    /// Reads, changes and writes back the value under `key`, atomically.
    ///
    /// `body` gets the current value (`nil` if none); setting it to `nil` deletes it. If
    /// `body` throws, nothing is written and the error is rethrown. `body` runs inside
    /// the write transaction: keep it short and never call the database from it.
    public func updateState<T>(_ key: String, _ body: (inout Data?) throws -> T) throws -> T {
        try database.writer.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.immediate) {
                result = try Self.update(db, key, body)
                return .commit
            }
            return result!
        }
    }

    /// The value under `key`, or `nil`.
    public func state(_ key: String) throws -> Data? {
        try database.writer.read { db in
            try Data.fetchOne(db, sql: "SELECT value FROM vault_state WHERE key = ?", arguments: [key])
        }
    }

    /// The read-modify-write itself, inside the caller's transaction.
    static func update<T>(_ db: Database, _ key: String, _ body: (inout Data?) throws -> T) throws -> T {
        var value = try Data.fetchOne(db, sql: "SELECT value FROM vault_state WHERE key = ?", arguments: [key])
        let result = try body(&value)
        if let value {
            try db.execute(sql: """
                INSERT INTO vault_state (key, value, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """, arguments: [key, value, Date().timeIntervalSince1970])
        } else {
            try db.execute(sql: "DELETE FROM vault_state WHERE key = ?", arguments: [key])
        }
        return result
    }
}
