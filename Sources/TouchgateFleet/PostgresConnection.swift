import CPQ
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import TouchgatePolicy
import TouchgateAPI

/// One libpq connection to the collector's database. Every call blocks; one thread uses a
/// connection at a time (libpq's rule), and its owner closes it with ``close()``.
///
/// Every statement goes through ``execute(_:_:)``, the one place a libpq failure becomes
/// a ``ServiceError``. Parameters and results travel in text form; `bytea` as `\x` hex.
final class PostgresConnection {
    private var handle: OpaquePointer?

    /// Connects to `database` (a connection string or `postgresql://` URL) with `settings`
    /// (libpq keywords such as `sslmode`) taking precedence over it.
    /// - Throws: ``ServiceError`` `collector-unavailable` with libpq's reason.
    init(database: String, settings: [String: String] = [:]) throws(ServiceError) {
        var loadError = [CChar](repeating: 0, count: 256)
        guard tg_pq_load(&loadError, loadError.count) == 0 else {
            let reason = String(decoding: loadError.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw ServiceError(.collectorUnavailable, "cannot load PostgreSQL's client library (\(reason)): install it "
                               + "(apt-get install libpq5)")
        }
        // Earlier keywords are defaults the connection string may override; the TLS
        // settings come after it, so that the root-owned file has the last word.
        var pairs: [(String, String)] = [("application_name", "touchgate"), ("connect_timeout", "10"),
                                         ("dbname", database)]
        pairs += settings.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let keys = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            keys.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keywords = keys.map { UnsafePointer($0) } + [nil]
        let settingValues = values.map { UnsafePointer($0) } + [nil]
        handle = PQconnectdbParams(keywords, settingValues, 1)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let reason = Self.message(handle)
            PQfinish(handle)
            self.handle = nil
            throw ServiceError(.collectorUnavailable, "cannot connect to the collector's database: \(reason)")
        }
        _ = PQsetClientEncoding(handle, "UTF8")
        // Every table is looked up in `public` only: a schema named after the connecting role
        // (first in the default search path) cannot shadow the collector's tables for it.
        PQclear(PQexec(handle, "SELECT pg_catalog.set_config('search_path', 'public', false)"))
        // The server's notices ("already exists, skipping") are not for the person running us.
        _ = PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        assert(handle == nil, "a PostgresConnection was not closed")
    }

    /// Closes the connection; further use traps.
    func close() {
        PQfinish(handle)
        handle = nil
    }

    /// Runs `sql` with `parameters` (`$1` …; nil is SQL NULL); returns its rows. Without
    /// parameters `sql` may hold several statements (a migration).
    /// - Throws: ``ServiceError`` `collector-unavailable` with the server's or libpq's reason.
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?] = []) throws(ServiceError) -> PostgresRows {
        guard let handle else { preconditionFailure("a closed PostgresConnection was used") }
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        let result = parameters.isEmpty ? PQexec(handle, sql)
            : PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw failure(handle, result) }
        return PostgresRows(result)
    }

    /// The server's reason for a failed result, else libpq's.
    /// `audit-broken` for the collector's own "log damaged" states (SQLSTATE class TG,
    /// raised by the log's functions, FleetSchema version 3); `collector-unavailable` else.
    private func failure(_ handle: OpaquePointer, _ result: OpaquePointer?) -> ServiceError {
        let reason = result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) } ?? ""
        let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
        let text = (reason.isEmpty ? Self.message(handle) : reason).trimmingWhitespace()
        guard state?.hasPrefix("TG") == true else { return ServiceError(.collectorUnavailable, text) }
        // The server's "ERROR:  " prefix and context lines add nothing to what the function says.
        let first = text.split(separator: "\n").first.map(String.init) ?? text
        return ServiceError(.auditBroken, first.hasPrefix("ERROR:  ") ? String(first.dropFirst(8)) : first)
    }

    /// Runs `sql` with `parameters` sent in PostgreSQL's binary format (``BinaryParameter``;
    /// nil is NULL); returns how many rows it changed. For one statement carrying a whole
    /// batch as a few arrays: the server parses no text at all.
    /// - Throws: ``ServiceError`` `collector-unavailable` with the server's or libpq's reason.
    @discardableResult
    func executeBinary(_ sql: String, _ parameters: [[UInt8]?]) throws(ServiceError) -> Int {
        guard let handle else { preconditionFailure("a closed PostgresConnection was used") }
        let lengths = parameters.map { Int32($0?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { value in
            guard let value else { return nil }
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, value.count))
            value.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: bytes.count) }
            }
            return copy
        }
        defer { copies.forEach { $0?.deallocate() } }
        let pointers = copies.map { UnsafePointer($0) }
        let result = PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, lengths, formats, 0)
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK || PQresultStatus(result) == PGRES_TUPLES_OK else {
            throw failure(handle, result)
        }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// Runs `sql` (no parameters) asking for its result in PostgreSQL's binary format, and
    /// hands it to `body` to read in place (``PostgresBinaryResult``): for the verify loop,
    /// which reads a million rows. Neither side turns numbers or `bytea` into text and back.
    func query<T>(_ sql: String, _ body: (PostgresBinaryResult) throws(ServiceError) -> T) throws(ServiceError) -> T {
        guard let handle else { preconditionFailure("a closed PostgresConnection was used") }
        let result = PQexecParams(handle, sql, 0, nil, nil, nil, nil, 1)
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_TUPLES_OK else { throw failure(handle, result) }
        return try body(PostgresBinaryResult(result))
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws(ServiceError) -> T) throws(ServiceError) -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    private static func message(_ handle: OpaquePointer?) -> String {
        guard let handle, let text = PQerrorMessage(handle) else { return "out of memory" }
        return String(cString: text).trimmingWhitespace()
    }
}

/// The rows of a result, copied out of libpq.
struct PostgresRows {
    /// Each row's values in text form (nil: NULL).
    let rows: [[String?]]
    /// Rows the statement inserted, updated or deleted (`INSERT 0 N`).
    let affected: Int

    /// The first row's first value (nil: no row, or NULL).
    var scalar: String? { rows.first?.first ?? nil }

    fileprivate init(_ result: OpaquePointer?) {
        guard let result else {
            rows = []
            affected = 0
            return
        }
        affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        let (count, columns) = (PQntuples(result), PQnfields(result))
        rows = (0..<count).map { row in
            (0..<columns).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            }
        }
    }
}

/// `bytea` in the text form PostgreSQL reads and writes.
enum Bytea {
    /// `\x` and lowercase hex.
    static func text(_ bytes: [UInt8]) -> String { "\\x" + Hex.encode(bytes) }

    /// The bytes of `\x…`; nil for anything else.
    static func bytes(_ text: String?) -> [UInt8]? {
        guard let text, text.hasPrefix("\\x") else { return nil }
        return Hex.decode(String(text.dropFirst(2)))
    }
}

/// Values in PostgreSQL's binary format (what `int8send`, `float8send`, `array_send` …
/// write), for ``PostgresConnection/executeBinary(_:_:)``. Hand-written because it is the
/// shipping hot path: a batch as 17 arrays costs the server no parsing, where 17,000 text
/// parameters cost it more than storing the rows.
enum BinaryParameter {
    /// Type ids of the element types used.
    static let int8: UInt32 = 20, float8: UInt32 = 701, text: UInt32 = 25, bytea: UInt32 = 17

    /// Text without NUL (PostgreSQL's text holds none).
    static func text(_ value: String) -> [UInt8] { Array(value.utf8).filter { $0 != 0 } }

    /// A one-dimensional array of one element type, written element by element straight
    /// into its bytes (no array per element: a batch has 17,000 of them).
    struct ArrayBuilder {
        private(set) var bytes: [UInt8] = []
        private var count: UInt32 = 0
        private var hasNull = false

        /// An array of `type`, with room for `capacity` bytes.
        init(of type: UInt32, capacity: Int) {
            bytes.reserveCapacity(20 + capacity)
            for value in [1, 0, type, 0, 1] as [UInt32] { put(value) }  // dimensions, nulls, type, length, lower bound
        }

        private mutating func put(_ value: UInt32) {
            bytes.append(UInt8(truncatingIfNeeded: value >> 24))
            bytes.append(UInt8(truncatingIfNeeded: value >> 16))
            bytes.append(UInt8(truncatingIfNeeded: value >> 8))
            bytes.append(UInt8(truncatingIfNeeded: value))
        }

        private mutating func put(_ value: UInt64) {
            put(UInt32(truncatingIfNeeded: value >> 32))
            put(UInt32(truncatingIfNeeded: value))
        }

        mutating func null() {
            put(UInt32(bitPattern: -1))
            hasNull = true
            count += 1
        }

        mutating func int64(_ value: Int64) {
            put(8 as UInt32)
            put(UInt64(bitPattern: value))
            count += 1
        }

        mutating func double(_ value: Double) {
            put(8 as UInt32)
            put(value.bitPattern)
            count += 1
        }

        mutating func text(_ value: String?) {
            guard let value else { return null() }
            let start = bytes.count
            put(0 as UInt32)
            for byte in value.utf8 where byte != 0 { bytes.append(byte) }
            let length = UInt32(bytes.count - start - 4)
            for index in 0..<4 { bytes[start + index] = UInt8(truncatingIfNeeded: length >> (24 - 8 * UInt32(index))) }
            count += 1
        }

        mutating func bytea(_ value: [UInt8]?) {
            guard let value else { return null() }
            put(UInt32(value.count))
            bytes += value
            count += 1
        }

        /// The finished array: its element count and null flag filled in.
        var finished: [UInt8] {
            var done = bytes
            for index in 0..<4 {
                done[4 + index] = index == 3 && hasNull ? 1 : 0
                done[12 + index] = UInt8(truncatingIfNeeded: count >> (24 - 8 * UInt32(index)))
            }
            return done
        }
    }
}

/// A result in binary format read in place from libpq's memory, valid only inside
/// ``PostgresConnection/query(_:_:)``: `bigint` and `double precision` as 8 big-endian
/// bytes, `bytea` and `text` as their bytes. A field of another length reads as nil.
struct PostgresBinaryResult {
    private let result: OpaquePointer
    /// Rows.
    let count: Int

    fileprivate init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
    }

    private func field(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer? {
        let (row, column) = (Int32(row), Int32(column))
        guard PQgetisnull(result, row, column) == 0, let value = PQgetvalue(result, row, column) else { return nil }
        return UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(result, row, column)))
    }

    private func word(_ row: Int, _ column: Int) -> UInt64? {
        guard let bytes = field(row, column), bytes.count == 8 else { return nil }
        return UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
    }

    func int64(_ row: Int, _ column: Int) -> Int64? { word(row, column).map { Int64(bitPattern: $0) } }

    func double(_ row: Int, _ column: Int) -> Double? { word(row, column).map(Double.init(bitPattern:)) }

    func bytes(_ row: Int, _ column: Int) -> [UInt8]? { field(row, column).map { Array($0) } }

    /// Text (the database's encoding is UTF-8; anything else is repaired, and then fails
    /// the chain it is hashed into).
    func string(_ row: Int, _ column: Int) -> String? {
        field(row, column).map { String(decoding: $0, as: UTF8.self) }
    }
}
