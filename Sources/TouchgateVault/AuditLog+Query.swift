import Foundation
import GRDB

extension AuditLog {
    /// The records `query` selects, in its order, for `touchgate audit show`.
    ///
    /// - Throws: ``AuditError/malformedRecord(sequence:)`` for a hand-edited row of the
    ///   wrong type, or a GRDB `DatabaseError`. Records are returned as stored; call
    ///   ``verify()`` to know whether they can be trusted.
    public func records(_ query: AuditQuery = AuditQuery()) throws -> [AuditRecord] {
        var records: [AuditRecord] = []
        try forEachRecord(query) { records.append($0) }
        return records
    }

    /// Calls `body` with each record `query` selects, in its order, from one database
    /// snapshot, without holding them all in memory (for `touchgate audit export`);
    /// returns how many. `body` may throw to stop.
    ///
    /// Records are passed as stored; run ``verify()`` alongside.
    /// - Throws: what `body` throws, ``AuditError/malformedRecord(sequence:)`` or a GRDB
    ///   `DatabaseError`.
    @discardableResult
    public func forEachRecord(_ query: AuditQuery = AuditQuery(), _ body: (AuditRecord) throws -> Void) throws -> Int {
        let (condition, arguments) = query.condition
        let direction = query.order == .oldestFirst ? "ASC" : "DESC"
        var sql = "SELECT \(Self.recordColumns) FROM audit \(condition) ORDER BY seq \(direction)"
        var allArguments = arguments
        if let limit = query.limit {
            // The most recent `limit` matching records, then in the order asked for.
            sql = "SELECT * FROM (SELECT \(Self.recordColumns) FROM audit \(condition) ORDER BY seq DESC LIMIT ?) "
                + "ORDER BY seq \(direction)"
            allArguments += [max(0, limit)]
        }
        return try database.writer.read { db in
            let rows = try Row.fetchCursor(db, sql: sql, arguments: allArguments)
            var count = 0
            while let row = try rows.next() {
                try body(try Self.decodeRecord(row))
                count += 1
            }
            return count
        }
    }

    /// How many stored records `query` selects, ignoring its ``AuditQuery/limit``: with
    /// ``records(_:)`` it tells how many a limit left out.
    public func count(_ query: AuditQuery = AuditQuery()) throws -> Int {
        let (condition, arguments) = query.condition
        return try database.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM audit \(condition)", arguments: arguments) ?? 0
        }
    }

    private static func decodeRecord(_ row: Row) throws -> AuditRecord {
        guard let (fields, mac) = decode(row) else {
            throw AuditError.malformedRecord(sequence: row[0] as Int64)
        }
        return record(fields, mac: mac)
    }
}
