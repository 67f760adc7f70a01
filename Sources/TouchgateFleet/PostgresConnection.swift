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

    /// The first row's first value (nil: no row, or NULL).
    var scalar: String? { rows.first?.first ?? nil }

    fileprivate init(_ result: OpaquePointer?) {
        guard let result else {
            rows = []
            return
        }
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
