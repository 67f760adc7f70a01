import CPQ
import Foundation
import TouchgatePolicy
import TouchgateWire

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
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let reason = result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) } ?? ""
            throw ServiceError(.collectorUnavailable, (reason.isEmpty ? Self.message(handle) : reason)
                .trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return PostgresRows(result)
    }

    /// Runs `sql`, a `COPY … FROM STDIN` in PostgreSQL's text format, sending `data` (rows
    /// already encoded, see ``CopyText``); returns how many rows it copied. One round trip
    /// and no parameters to parse: what makes a batch of records cheap to send.
    /// - Throws: ``ServiceError`` `collector-unavailable` with the server's or libpq's reason.
    @discardableResult
    func copy(_ sql: String, _ data: [UInt8]) throws(ServiceError) -> Int {
        guard let handle else { preconditionFailure("a closed PostgresConnection was used") }
        let started = PQexec(handle, sql)
        let status = PQresultStatus(started)
        PQclear(started)
        guard status == PGRES_COPY_IN else { throw failure(handle, nil) }
        var sent = true
        data.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { bytes in
                var offset = 0
                while sent, offset < bytes.count {
                    let count = min(bytes.count - offset, 1 << 20)
                    sent = PQputCopyData(handle, bytes.baseAddress! + offset, Int32(count)) == 1
                    offset += count
                }
            }
        }
        let ended = PQputCopyEnd(handle, sent ? nil : "the client could not send the rows") == 1
        var copied: Int?
        var problem: ServiceError?
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                copied = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if problem == nil {
                problem = failure(handle, result)
            }
            PQclear(result)
        }
        if let problem { throw problem }
        guard sent, ended, let copied else { throw failure(handle, nil) }
        return copied
    }

    /// The server's reason for a failed result, else libpq's.
    private func failure(_ handle: OpaquePointer, _ result: OpaquePointer?) -> ServiceError {
        let reason = result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) } ?? ""
        return ServiceError(.collectorUnavailable, (reason.isEmpty ? Self.message(handle) : reason)
            .trimmingCharacters(in: .whitespacesAndNewlines))
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
        return String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
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

/// Rows in the text format of `COPY … FROM STDIN`, written byte by byte: tab between
/// fields, a newline after each row, `\N` for NULL, and `\`, tab, newline and carriage
/// return escaped. Hand-written because it is the shipping hot path: building 17,000
/// statement parameters as strings took longer than the database took to store them.
struct CopyText {
    private(set) var bytes: [UInt8] = []
    private var first = true
    private static let digits = Array("0123456789abcdef".utf8)

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    private mutating func separate() {
        if first { first = false } else { bytes.append(0x09) }
    }

    /// Ends the row.
    mutating func endRow() {
        bytes.append(0x0a)
        first = true
    }

    mutating func null() {
        separate()
        bytes.append(0x5c)
        bytes.append(0x4e)
    }

    private mutating func escaped(_ letter: UInt8) {
        bytes.append(0x5c)
        bytes.append(letter)
    }

    mutating func text(_ value: String?) {
        guard let value else { return null() }
        separate()
        for byte in value.utf8 {
            switch byte {
            case 0x5c: escaped(0x5c)
            case 0x09: escaped(0x74)
            case 0x0a: escaped(0x6e)
            case 0x0d: escaped(0x72)
            case 0x00: continue  // PostgreSQL's text holds no NUL.
            default: bytes.append(byte)
            }
        }
    }

    /// A value whose text form needs no escaping (a number).
    mutating func plain(_ value: String) {
        separate()
        bytes += value.utf8
    }

    /// `bytea` as `\x` and hex (the backslash itself escaped for COPY).
    mutating func bytea(_ value: [UInt8]?) {
        guard let value else { return null() }
        separate()
        escaped(0x5c)
        bytes.append(0x78)
        Self.digits.withUnsafeBufferPointer { digits in
            for byte in value {
                bytes.append(digits[Int(byte >> 4)])
                bytes.append(digits[Int(byte & 0x0f)])
            }
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
