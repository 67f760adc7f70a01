import CSQLite
package import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

// The store's own thin layer over SQLite's C API: one connection (`Database`), values and
// rows, a pool of connections for a process's concurrent requests, and the schema's
// migrations. Hand-written on purpose, for a measurement: the library used before (GRDB)
// imports the whole of Foundation, and with it ICU's 34 MB of data linked into every program
// that opens a store (docs/ARCHITECTURE.md, "Weight"); what the store asks of SQLite is this.

/// A failed SQLite call: its extended result code and SQLite's message.
package struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// The extended result code (`sqlite3_extended_errcode`).
    package let extendedCode: Int32
    /// SQLite's message, when it gave one.
    package let message: String?

    /// The primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, …): the low byte.
    package var resultCode: Int32 { extendedCode & 0xFF }

    package init(code: Int32, message: String?) {
        extendedCode = code
        self.message = message
    }

    package var description: String {
        "SQLite error \(resultCode)" + (message.map { ": \($0)" } ?? "")
    }

    /// A connection, pool or queue used after it was closed (SQLITE_MISUSE).
    package static let closed = DatabaseError(code: SQLITE_MISUSE, message: "the database connection was closed")

    package static let busy = SQLITE_BUSY, locked = SQLITE_LOCKED, full = SQLITE_FULL, ioError = SQLITE_IOERR,
                       cannotOpen = SQLITE_CANTOPEN, constraint = SQLITE_CONSTRAINT
}

/// One SQLite value.
package enum DatabaseValue: Equatable, Sendable {
    case null
    case int64(Int64)
    case double(Double)
    case string(String)
    case blob(Data)

    package var isNull: Bool { self == .null }
}

/// A Swift value that binds to a statement's parameter and reads back from a column.
package protocol DatabaseValueConvertible {
    var databaseValue: DatabaseValue { get }
    /// The value of a column; nil for NULL or a value of another kind (which a damaged or
    /// edited store may hold: reading it never traps).
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension DatabaseValue: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { self }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> DatabaseValue? { value }
}

extension Int64: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .int64(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .int64(let integer): integer
        case .double(let real) where real == real.rounded() && abs(real) < 9.2e18: Int64(real)
        default: nil
        }
    }
}

extension Int: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .int64(Int64(self)) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Int? { Int64.fromDatabaseValue(value).map { Int($0) } }
}

extension Int32: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .int64(Int64(self)) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Int32? {
        Int64.fromDatabaseValue(value).flatMap { Int32(exactly: $0) }
    }
}

extension UInt32: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .int64(Int64(self)) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> UInt32? {
        Int64.fromDatabaseValue(value).flatMap { UInt32(exactly: $0) }
    }
}

extension Bool: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .int64(self ? 1 : 0) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? { Int64.fromDatabaseValue(value).map { $0 != 0 } }
}

extension Double: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .double(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .double(let real): real
        case .int64(let integer): Double(integer)
        default: nil
        }
    }
}

extension String: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .string(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        if case .string(let text) = value { text } else { nil }
    }
}

extension Data: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .blob(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        switch value {
        case .blob(let bytes): bytes
        case .string(let text): Data(text.utf8)
        default: nil
        }
    }
}

extension Array: DatabaseValueConvertible where Element == UInt8 {
    package var databaseValue: DatabaseValue { .blob(Data(self)) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> [UInt8]? { Data.fromDatabaseValue(value).map { Array($0) } }
}

/// The values bound to a statement's `?` parameters, in order.
package struct StatementArguments: ExpressibleByArrayLiteral {
    package var values: [DatabaseValue]

    package init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        values = elements.map { $0?.databaseValue ?? .null }
    }

    package init(_ elements: [(any DatabaseValueConvertible)?]) {
        values = elements.map { $0?.databaseValue ?? .null }
    }

    package static func += (arguments: inout StatementArguments, more: StatementArguments) {
        arguments.values += more.values
    }
}

/// One row read from a statement: its values, copied out, and its columns' names.
package struct Row {
    package let columns: [String]
    package let values: [DatabaseValue]

    /// How many columns it has.
    package var count: Int { values.count }

    /// The value at `index` (0-based); NULL when there is no such column.
    package func value(at index: Int) -> DatabaseValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The value of the column named `name` (case-insensitively, as SQL names are); NULL
    /// when there is no such column.
    package func value(named name: String) -> DatabaseValue {
        let wanted = name.lowercased()
        guard let index = columns.firstIndex(where: { $0.lowercased() == wanted }) else { return .null }
        return values[index]
    }

    /// The value at `index` as `V`; its zero value (0, "", no bytes) when it is NULL or of
    /// another kind, which only an edited store holds: every value that matters is checked
    /// against the store's MACs, and a trap here would let such a store stop a daemon.
    package subscript<V: DatabaseValueConvertible & ZeroValued>(_ index: Int) -> V {
        V.fromDatabaseValue(value(at: index)) ?? V.zero
    }

    package subscript<V: DatabaseValueConvertible>(_ index: Int) -> V? {
        V.fromDatabaseValue(value(at: index))
    }

    package subscript<V: DatabaseValueConvertible & ZeroValued>(_ name: String) -> V {
        V.fromDatabaseValue(value(named: name)) ?? V.zero
    }

    package subscript<V: DatabaseValueConvertible>(_ name: String) -> V? {
        V.fromDatabaseValue(value(named: name))
    }

    package subscript(_ index: Int) -> DatabaseValue { value(at: index) }
    package subscript(_ name: String) -> DatabaseValue { value(named: name) }
}

extension String {
    /// This text as an SQL identifier: in double quotes, each double quote doubled.
    package var quotedDatabaseIdentifier: String { "\"" + map { $0 == "\"" ? "\"\"" : String($0) }.joined() + "\"" }
}

/// What a non-optional read of NULL (or of another kind) gives.
package protocol ZeroValued { static var zero: Self { get } }
extension Int64: ZeroValued {}
extension Int: ZeroValued {}
extension Int32: ZeroValued {}
extension UInt32: ZeroValued {}
extension Double: ZeroValued {}
extension Bool: ZeroValued { package static var zero: Bool { false } }
extension String: ZeroValued { package static var zero: String { "" } }
extension Data: ZeroValued { package static var zero: Data { Data() } }
extension Array: ZeroValued where Element == UInt8 { package static var zero: [UInt8] { [] } }

/// One connection to a database file. Not for two callers at once: the pool and the queue
/// hand a connection to one caller at a time, under a lock.
// @unchecked Sendable: a connection moves between threads only through those locks (one
// user at a time), and Debian's SQLite is built thread-safe (SQLITE_THREADSAFE=1), so a
// connection may be used from any thread as long as one at a time.
package final class Database: @unchecked Sendable {
    package enum TransactionKind: String { case deferred = "DEFERRED", immediate = "IMMEDIATE", exclusive = "EXCLUSIVE" }
    package enum TransactionCompletion { case commit, rollback }

    private var handle: OpaquePointer?
    /// Prepared statements by their SQL, reused (preparing was most of the cost of the
    /// small queries a daemon answers at every request).
    private var cache: [String: OpaquePointer] = [:]

    /// Opens `path` (which must exist unless `create`), waits up to `busyTimeout` seconds for
    /// another connection's lock, and sets what every connection of the store has:
    /// extended result codes and `trusted_schema = OFF` (a store may come from elsewhere: its
    /// schema is not trusted to run functions with side effects from triggers or views).
    package init(path: String, readOnly: Bool = false, create: Bool = false, busyTimeout: Int32 = 10) throws {
        var flags = SQLITE_OPEN_NOMUTEX | (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE)
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        var opened: OpaquePointer?
        let status = sqlite3_open_v2(path, &opened, flags, nil)
        handle = opened
        guard status == SQLITE_OK, opened != nil else {
            let error = DatabaseError(code: opened.map { sqlite3_extended_errcode($0) } ?? status,
                                      message: opened.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) })
            sqlite3_close_v2(opened)
            handle = nil
            throw error
        }
        sqlite3_extended_result_codes(opened, 1)
        sqlite3_busy_timeout(opened, busyTimeout * 1000)
        try execute(sql: "PRAGMA trusted_schema = OFF")
        // One read now: a file that is no database fails here, at the open, and the WAL and
        // shared-memory files are opened (by root: chowned to the database's owner) before
        // anything watches the directory for changes (``StoreSnapshots``).
        _ = try firstRow(sql: "SELECT count(*) FROM sqlite_master")
    }

    deinit { close() }

    /// Finalises every statement and closes the connection; later calls throw.
    package func close() {
        for statement in cache.values { sqlite3_finalize(statement) }
        cache.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    package var changesCount: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// Runs `sql`: one statement with `arguments`, or several (a migration's) without.
    package func execute(sql: String, arguments: StatementArguments = []) throws {
        if arguments.values.isEmpty, sql.contains(";") {
            try executeScript(sql)
            return
        }
        let statement = try cached(sql)
        defer { sqlite3_reset(statement) }
        try bind(arguments, to: statement)
        while try step(statement) {}
    }

    /// The rows of `sql` with `arguments`, read at once.
    package func rows(sql: String, arguments: StatementArguments = []) throws -> [Row] {
        let statement = try cached(sql)
        defer { sqlite3_reset(statement) }
        try bind(arguments, to: statement)
        let columns = Self.columnNames(statement)
        var rows: [Row] = []
        while try step(statement) { rows.append(Row(columns: columns, values: Self.values(statement))) }
        return rows
    }

    /// The first row of `sql` with `arguments`, if any.
    package func firstRow(sql: String, arguments: StatementArguments = []) throws -> Row? {
        let statement = try cached(sql)
        defer { sqlite3_reset(statement) }
        try bind(arguments, to: statement)
        return try step(statement) ? Row(columns: Self.columnNames(statement), values: Self.values(statement)) : nil
    }

    /// The rows of `sql` with `arguments`, one at a time, from a statement of the cursor's own.
    package func cursor(sql: String, arguments: StatementArguments = []) throws -> RowCursor {
        let statement = try prepare(sql)
        do {
            try bind(arguments, to: statement)
        } catch {
            sqlite3_finalize(statement)
            throw error
        }
        return RowCursor(database: self, statement: statement)
    }

    /// Runs `body` in a transaction of `kind`: committed when it returns `.commit`, rolled
    /// back when it returns `.rollback` or throws.
    package func inTransaction(_ kind: TransactionKind = .deferred, _ body: () throws -> TransactionCompletion) throws {
        try execute(sql: "BEGIN \(kind.rawValue) TRANSACTION")
        let completion: TransactionCompletion
        do {
            completion = try body()
        } catch {
            try? execute(sql: "ROLLBACK TRANSACTION")
            throw error
        }
        switch completion {
        case .commit:
            do {
                try execute(sql: "COMMIT TRANSACTION")
            } catch {
                try? execute(sql: "ROLLBACK TRANSACTION")
                throw error
            }
        case .rollback:
            try execute(sql: "ROLLBACK TRANSACTION")
        }
    }

    /// Whether a transaction is open on this connection.
    package var isInsideTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    // MARK: Statements

    fileprivate func step(_ statement: OpaquePointer) throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw lastError()
        }
    }

    fileprivate static func columnNames(_ statement: OpaquePointer) -> [String] {
        (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
    }

    fileprivate static func values(_ statement: OpaquePointer) -> [DatabaseValue] {
        (0..<sqlite3_column_count(statement)).map { column in
            switch sqlite3_column_type(statement, column) {
            case SQLITE_INTEGER: .int64(sqlite3_column_int64(statement, column))
            case SQLITE_FLOAT: .double(sqlite3_column_double(statement, column))
            case SQLITE_TEXT:
                .string(String(decoding: UnsafeRawBufferPointer(start: sqlite3_column_text(statement, column),
                                                                count: Int(sqlite3_column_bytes(statement, column))),
                               as: UTF8.self))
            case SQLITE_BLOB:
                .blob(Data(bytes: sqlite3_column_blob(statement, column) ?? UnsafeRawPointer(bitPattern: 1)!,
                           count: Int(sqlite3_column_bytes(statement, column))))
            default: .null
            }
        }
    }

    private func cached(_ sql: String) throws -> OpaquePointer {
        if let statement = cache[sql] { return statement }
        let statement = try prepare(sql)
        cache[sql] = statement
        return statement
    }

    private func prepare(_ sql: String) throws -> OpaquePointer {
        guard let handle else { throw DatabaseError.closed }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw lastError()
        }
        return statement
    }

    /// Several statements in one text, none with parameters (a migration's).
    private func executeScript(_ sql: String) throws {
        guard let handle else { throw DatabaseError.closed }
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw lastError() }
    }

    private func bind(_ arguments: StatementArguments, to statement: OpaquePointer) throws {
        sqlite3_clear_bindings(statement)
        let expected = Int(sqlite3_bind_parameter_count(statement))
        guard expected == arguments.values.count else {
            throw DatabaseError(code: SQLITE_RANGE,
                                message: "the statement takes \(expected) arguments, \(arguments.values.count) were given")
        }
        for (offset, value) in arguments.values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32 = switch value {
            case .null: sqlite3_bind_null(statement, index)
            case .int64(let integer): sqlite3_bind_int64(statement, index, integer)
            case .double(let real): sqlite3_bind_double(statement, index, real)
            // By length, not up to the first NUL: text may hold one.
            case .string(let text): sqlite3_bind_text(statement, index, text, Int32(text.utf8.count), Self.transient)
            case .blob(let bytes):
                bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                                                          Int32($0.count), Self.transient) }
            }
            guard status == SQLITE_OK else { throw lastError() }
        }
    }

    /// SQLITE_TRANSIENT (a macro Swift does not import): SQLite copies the bound bytes.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    fileprivate func lastError() -> DatabaseError {
        guard let handle else { return DatabaseError.closed }
        return DatabaseError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// Rows read one at a time; its statement is finalised when the rows end or it goes.
package final class RowCursor {
    private let database: Database?
    private var statement: OpaquePointer?
    private var remaining: [Row].SubSequence
    private var columns: [String] = []

    fileprivate init(database: Database, statement: OpaquePointer) {
        self.database = database
        self.statement = statement
        remaining = []
        columns = Database.columnNames(statement)
    }

    /// Rows already read, handed out one at a time.
    package init(rows: [Row]) {
        database = nil
        remaining = rows[...]
    }

    deinit { finish() }

    package func next() throws -> Row? {
        guard let database, let statement else { return remaining.popFirst() }
        do {
            guard try database.step(statement) else {
                finish()
                return nil
            }
        } catch {
            finish()
            throw error
        }
        return Row(columns: columns, values: Database.values(statement))
    }

    private func finish() {
        if let statement { sqlite3_finalize(statement) }
        statement = nil
    }
}

extension DatabaseValueConvertible {
    /// The first column of the first row of `sql`; nil when there is no row or it is NULL.
    package static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try db.firstRow(sql: sql, arguments: arguments).flatMap { fromDatabaseValue($0.value(at: 0)) }
    }

    /// The first column of every row of `sql` that is not NULL.
    package static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try db.rows(sql: sql, arguments: arguments).compactMap { fromDatabaseValue($0.value(at: 0)) }
    }
}

extension Row {
    package static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        try db.firstRow(sql: sql, arguments: arguments)
    }

    package static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try db.rows(sql: sql, arguments: arguments)
    }

    package static func fetchCursor(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> RowCursor {
        try db.cursor(sql: sql, arguments: arguments)
    }
}
