import Foundation
import GRDB

extension AuditLog {
    /// Records in sequence order, for `touchgate audit show`.
    ///
    /// - Parameters:
    ///   - since: only records whose wall time is at or after this instant.
    ///   - limit: at most this many, the most recent ones (like `journalctl -n`).
    /// - Throws: ``AuditError/malformedRecord(sequence:)`` for a hand-edited row of the
    ///   wrong type, or a GRDB `DatabaseError`. Records are returned as stored; call
    ///   ``verify()`` to know whether they can be trusted.
    public func records(since: Date? = nil, limit: Int? = nil) throws -> [AuditRecord] {
        let filter = "WHERE (?1 IS NULL OR wallTime >= ?1)"
        let sql = limit == nil
            ? "SELECT \(Self.recordColumns) FROM audit \(filter) ORDER BY seq"
            : "SELECT * FROM (SELECT \(Self.recordColumns) FROM audit \(filter) ORDER BY seq DESC LIMIT ?2) ORDER BY seq"
        return try database.writer.read { db in
            var arguments: StatementArguments = [since?.timeIntervalSince1970]
            if let limit { arguments += [max(0, limit)] }
            let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            var records: [AuditRecord] = []
            while let row = try rows.next() {
                records.append(try Self.decodeRecord(row))
            }
            return records
        }
    }

    /// Writes records as JSON lines (see ``AuditRecord/jsonLine``), oldest first, for
    /// `touchgate audit export`; returns how many.
    ///
    /// Streams from one database snapshot: `write` is called once per record and may
    /// throw to stop. Records are exported as stored; run ``verify()`` alongside.
    @discardableResult
    public func exportJSONLines(since: Date? = nil, to write: (String) throws -> Void) throws -> Int {
        try database.writer.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(Self.recordColumns) FROM audit WHERE (?1 IS NULL OR wallTime >= ?1) ORDER BY seq
                """, arguments: [since?.timeIntervalSince1970])
            var count = 0
            while let row = try rows.next() {
                try write(try Self.decodeRecord(row).jsonLine)
                count += 1
            }
            return count
        }
    }

    /// The number of stored records.
    public func count() throws -> Int {
        try database.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM audit") ?? 0 }
    }

    private static func decodeRecord(_ row: Row) throws -> AuditRecord {
        guard let (fields, mac) = decode(row) else {
            throw AuditError.malformedRecord(sequence: row[0] as Int64)
        }
        return record(fields, mac: mac)
    }
}
