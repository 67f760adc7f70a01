public import FoundationEssentials

/// Small named blobs other layers persist across processes (lockout counters, policy
/// settings, the enrollment generation), authenticated by the audit head.
///
/// ## Integrity
/// The values are stored as given (not encrypted: never put a secret in them), but not
/// trusted as found: the audit head carries a digest of every `vault_state` row and of
/// the vault's `templates_sealed` marker (``StateDigest``) under its MAC. Every read and
/// every update first checks, inside its transaction, that the head is present and
/// authentic, names the last audit record, and matches the state; otherwise it throws
/// ``IntegrityError/stateTampered(detail:)`` and writes nothing. An update then stores
/// the new digest in the head in the same transaction. So an edit with sqlite3 (a reset
/// lockout, loosened settings, a changed enrollment generation, a deleted or inserted
/// row, a flipped marker) is found, and so is an older copy of the rows swapped back,
/// alone or together with the head while newer audit records remain. Whole-directory
/// rollback is not (see DESIGN.md), nor is anything done by someone who can read
/// `audit.key`. ``unverifiedState()`` and ``reseal(_:templatesSealed:recording:)`` are
/// the repair command's tools.
///
/// ## Concurrency
/// Each update runs in one `BEGIN IMMEDIATE` transaction: writers in this process are
/// serialized by GRDB, writers in other processes by SQLite's lock and the database's
/// busy timeout, so a read-modify-write through ``updateState(_:_:)`` never loses an
/// update. To change the state together with an audit record, items or prints, use
/// ``AuditLog/atomically(_:)``. Keys starting with `vault.` are the vault's.
public struct StateStore: Sendable {
    let database: TouchgateDatabase
    /// The log given to ``init(log:)``; `nil` when the log is opened at each call.
    let fixedLog: AuditLog?

    /// A store over `database` that opens its audit log (``AuditLog/init(database:journal:now:)``,
    /// journald at its default socket) at each call, and so needs no other argument.
    ///
    /// Kept for callers that have no ``AuditLog`` at hand; prefer ``init(log:)``, which
    /// reads the key file once. Opening the log may create it while no vault exists, and
    /// throws ``AuditError/wiped(detail:)`` from every call when a vault's trail is gone.
    public init(database: TouchgateDatabase) {
        self.database = database
        self.fixedLog = nil
    }

    /// A store over `log`'s database, authenticated with `log`'s key.
    public init(log: AuditLog) {
        self.database = log.database
        self.fixedLog = log
    }

    /// The audit log that authenticates the state.
    func auditLog() throws -> AuditLog {
        try fixedLog ?? AuditLog(database: database)
    }

    /// Reads, changes and writes back the value under `key`, atomically, and
    /// re-authenticates the state.
    ///
    /// `body` gets the current value (`nil` if none); setting it to `nil` deletes it. If
    /// `body` throws, nothing is written and the error is rethrown. `body` runs inside
    /// the write transaction: keep it short and never call the database from it.
    /// - Throws: ``IntegrityError/stateTampered(detail:)`` (before `body` runs; nothing is
    ///   written), ``AuditError`` when the audit log cannot be opened, GRDB errors.
    public func updateState<T>(_ key: String, _ body: (inout Data?) throws -> T) throws -> T {
        try auditLog().atomically { transaction in try transaction.updateState(key, body) }
    }

    /// ``updateState(_:_:)``, then `then` with the result inside the same transaction (to
    /// append the audit records of the change: they and the change commit together, or
    /// neither does when `then` throws).
    public func updateState<T>(_ key: String, _ body: (inout Data?) throws -> T,
                               then: (StoreTransaction, T) throws -> Void) throws -> T {
        try auditLog().atomically { transaction in
            let result = try transaction.updateState(key, body)
            try then(transaction, result)
            return result
        }
    }

    /// The value under `key`, or `nil`, once the state checks out.
    /// - Throws: ``IntegrityError/stateTampered(detail:)``, ``AuditError`` when the audit
    ///   log cannot be opened, GRDB errors.
    public func state(_ key: String) throws -> Data? {
        let log = try auditLog()
        return try database.writer.read { db in
            _ = try log.requireAuthenticState(db)
            return try Self.value(db, key)
        }
    }

    /// The values under `keys` (absent ones left out), read under one check of the state:
    /// a request that needs several pays for the check once.
    /// - Throws: as ``state(_:)``.
    public func states(_ keys: [String]) throws -> [String: Data] {
        let log = try auditLog()
        return try database.writer.read { db in
            _ = try log.requireAuthenticState(db)
            var values: [String: Data] = [:]
            for key in keys { values[key] = try Self.value(db, key) }
            return values
        }
    }

    /// The stored value, unchecked, inside the caller's transaction.
    static func value(_ db: Database, _ key: String) throws -> Data? {
        try Data.fetchOne(db, sql: "SELECT value FROM vault_state WHERE key = ?", arguments: [key])
    }

    /// The read-modify-write itself, inside the caller's transaction (which checks and
    /// saves the authenticated state around it). A body that leaves the value as it was
    /// writes nothing, so a decision that changes no state (a lockout check) commits no
    /// page and waits for no disk flush; `changed` says which it was.
    static func update<T>(_ db: Database, _ key: String, _ body: (inout Data?) throws -> T) throws -> (T, changed: Bool) {
        let before = try value(db, key)
        var value = before
        let result = try body(&value)
        guard value != before else { return (result, false) }
        if let value {
            try db.execute(sql: """
                INSERT INTO vault_state (key, value, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """, arguments: [key, value, Date().timeIntervalSince1970])
        } else {
            try db.execute(sql: "DELETE FROM vault_state WHERE key = ?", arguments: [key])
        }
        return (result, true)
    }
}
