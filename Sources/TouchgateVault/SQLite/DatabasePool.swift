import Synchronization

/// What reads and writes a database: a pool of connections or a single one.
package protocol DatabaseWriter: Sendable {
    /// Runs `body` in a read transaction: a snapshot of the last commit, whatever commits meanwhile.
    func read<T>(_ body: (Database) throws -> T) throws -> T
    /// Runs `body` in an immediate transaction, committed when it returns.
    func write<T>(_ body: (Database) throws -> T) throws -> T
    /// Runs `body` on the writing connection, outside any transaction.
    func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T
    /// Closes every connection; later calls throw.
    func close() throws
}

extension DatabaseWriter {
    package func write<T>(_ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in try db.transaction(.immediate, body) }
    }
}

extension Database {
    /// `body`'s result, in a transaction of `kind` committed when it returns.
    package func transaction<T>(_ kind: TransactionKind, _ body: (Database) throws -> T) throws -> T {
        var result: T?
        try inTransaction(kind) {
            result = try body(self)
            return .commit
        }
        return result!
    }
}

/// A database in WAL mode for a process's concurrent requests: one writing connection,
/// used by one caller at a time, and reading connections opened as readers need them
/// (SQLite's WAL lets them read the last commit while the writer writes).
package final class DatabasePool: DatabaseWriter {
    /// The writing connection; nil once closed. A Mutex: writes are serial anyway (SQLite
    /// has one writer), and waiting here is cheaper than SQLite's busy loop.
    private let writer: Mutex<Database?>
    /// Reading connections not in use.
    private let idle = Mutex<[Database]>([])
    private let closed = Atomic<Bool>(false)
    private let path: String
    private let busyTimeout: Int32
    /// At most this many idle readers are kept open.
    private static let keptReaders = 4

    /// Opens `path` (creating it when missing), in WAL mode with durable commits
    /// (`synchronous = FULL`: an audit record or a lockout count must survive a crash right
    /// after the decision it records).
    package init(path: String, busyTimeout: Int32 = 10) throws {
        self.path = path
        self.busyTimeout = busyTimeout
        let connection = try Database(path: path, create: true, busyTimeout: busyTimeout)
        try connection.execute(sql: "PRAGMA journal_mode = WAL")
        try connection.execute(sql: "PRAGMA synchronous = FULL")
        writer = Mutex(connection)
    }

    package func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try writer.withLock { connection throws -> T in
            guard let connection else { throw DatabaseError.closed }
            return try body(connection)
        }
    }

    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw DatabaseError.closed }
        let connection: Database
        if let reused = idle.withLock({ $0.popLast() }) {
            connection = reused
        } else {
            connection = try Database(path: path, busyTimeout: busyTimeout)
            try connection.execute(sql: "PRAGMA query_only = ON")
        }
        let result = try connection.transaction(.deferred, body)
        if !closed.load(ordering: .acquiring) {
            idle.withLock { readers in if readers.count < Self.keptReaders { readers.append(connection) } }
        }
        return result
    }

    package func close() throws {
        closed.store(true, ordering: .releasing)
        writer.withLock { connection in
            connection?.close()
            connection = nil
        }
        idle.withLock { readers in
            readers.forEach { $0.close() }
            readers.removeAll()
        }
    }
}

/// One connection, used by one caller at a time: a tool's or a test's view of a store.
package final class DatabaseQueue: DatabaseWriter {
    private let connection: Mutex<Database?>

    /// Opens `path`, read-only when asked; creates it when asked.
    package init(path: String, readOnly: Bool = false, create: Bool = false, busyTimeout: Int32 = 10) throws {
        connection = Mutex(try Database(path: path, readOnly: readOnly, create: create, busyTimeout: busyTimeout))
    }

    /// Runs `body` on the connection, outside any transaction.
    package func inDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        try connection.withLock { connection throws -> T in
            guard let connection else { throw DatabaseError.closed }
            return try body(connection)
        }
    }

    /// Runs `body` in a transaction of `kind`, committed or rolled back as it says.
    package func inTransaction(_ kind: Database.TransactionKind = .deferred,
                               _ body: (Database) throws -> Database.TransactionCompletion) throws {
        try inDatabase { db in try db.inTransaction(kind) { try body(db) } }
    }

    package func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T { try inDatabase(body) }

    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        try inDatabase { db in try db.transaction(.deferred, body) }
    }

    package func close() throws {
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }
}

/// The schema's changes, each run once per store, in the order registered, in a
/// transaction with the record that it ran.
package struct DatabaseMigrator {
    /// The table that records which ran. Its name is the one every store made so far
    /// carries (the migrations were first run by GRDB's migrator, which names it so).
    static let table = "grdb_migrations"
    private var migrations: [(identifier: String, migrate: (Database) throws -> Void)] = []

    package init() {}

    package mutating func registerMigration(_ identifier: String, migrate: @escaping (Database) throws -> Void) {
        precondition(!migrations.contains { $0.identifier == identifier }, "migration \(identifier) registered twice")
        migrations.append((identifier, migrate))
    }

    /// Runs the migrations `writer`'s database has not run yet.
    package func migrate(_ writer: some DatabaseWriter) throws {
        try writer.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(Self.table) (identifier TEXT NOT NULL PRIMARY KEY)")
            let applied = try appliedIdentifiers(db)
            for migration in migrations where !applied.contains(migration.identifier) {
                try db.inTransaction(.immediate) {
                    try migration.migrate(db)
                    try db.execute(sql: "INSERT INTO \(Self.table) (identifier) VALUES (?)", arguments: [migration.identifier])
                    return .commit
                }
            }
        }
    }

    /// The identifiers `db` has run.
    package func appliedIdentifiers(_ db: Database) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT identifier FROM \(Self.table)"))
    }
}
