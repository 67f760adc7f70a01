import Foundation
import GRDB

extension AuditLog {
    /// The last sequence of `trail` a fleet collector confirmed (0: none yet): the local
    /// cursor of `touchgate audit ship`.
    public func shippedThrough(trail: [UInt8]) throws -> Int64 {
        try database.writer.read { db in
            try Int64.fetchOne(db, sql: "SELECT seq FROM auditShipped WHERE trail = ? AND typeof(seq) = 'integer'",
                               arguments: [Data(trail)]) ?? 0
        }
    }

    /// Moves the cursor of `trail` to `sequence`, once the collector committed every record
    /// up to it. Never moves it back.
    public func markShipped(trail: [UInt8], through sequence: Int64) throws {
        try database.writer.write { db in
            try db.execute(sql: """
                INSERT INTO auditShipped (trail, seq) VALUES (?, ?)
                ON CONFLICT (trail) DO UPDATE SET seq = max(seq, excluded.seq)
                """, arguments: [Data(trail), sequence])
        }
    }

    /// The stored records with sequences after `sequence` up to `last`, oldest first, at
    /// most `limit`, with their public links: one batch of a shipment.
    /// - Throws: ``AuditError/malformedRecord(sequence:)`` for a hand-edited row, GRDB errors.
    public func linkedRecords(after sequence: Int64, through last: Int64, limit: Int) throws -> [AuditRecord] {
        try database.writer.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(Self.linkedColumns) FROM audit WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?
                """, arguments: [sequence, last, limit])
            var records: [AuditRecord] = []
            while let row = try rows.next() {
                guard let (fields, mac) = Self.decode(row), let links = Self.decodeLinks(row) else {
                    throw AuditError.malformedRecord(sequence: row[0] as Int64)
                }
                records.append(Self.record(fields, mac: mac, links: links))
            }
            return records
        }
    }
}
