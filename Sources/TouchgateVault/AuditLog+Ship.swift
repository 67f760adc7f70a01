import FoundationEssentials

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

    /// The newest checkpoint of the fleet log this store accepted (its note as the
    /// collector gave it), or nil before the first verified shipment.
    public func acceptedCheckpoint() throws -> String? {
        try database.writer.read { db in
            try String.fetchOne(db, sql: "SELECT note FROM auditFleetCheckpoint WHERE id = 1 AND typeof(note) = 'text'")
        }
    }

    /// Keeps `note` (of a log of `size` entries) as the accepted checkpoint and moves
    /// `trail`'s cursor to `sequence`, in one transaction: once the collector proved it
    /// holds everything up to there. Neither moves back (two shipments of one store at
    /// once each keep the larger).
    public func accept(checkpoint note: String, size: Int64, trail: [UInt8], shippedThrough sequence: Int64) throws {
        try database.writer.write { db in
            try db.execute(sql: """
                INSERT INTO auditFleetCheckpoint (id, size, note) VALUES (1, ?, ?)
                ON CONFLICT (id) DO UPDATE SET size = excluded.size, note = excluded.note WHERE excluded.size >= size
                """, arguments: [size, note])
            try db.execute(sql: """
                INSERT INTO auditShipped (trail, seq) VALUES (?, ?)
                ON CONFLICT (trail) DO UPDATE SET seq = max(seq, excluded.seq)
                """, arguments: [Data(trail), sequence])
        }
    }

    /// Forgets the accepted checkpoint: the machine ships to a new log from now on
    /// (`touchgate audit ship --new-log`, after the collector was deliberately replaced).
    public func forgetCheckpoint() throws {
        try database.writer.write { db in try db.execute(sql: "DELETE FROM auditFleetCheckpoint") }
    }

    /// The fleet log's prefix: every message this key signs for the fleet starts with it
    /// (a batch head's first line), and no seal message can (they start `TGAUDH01`).
    public static let fleetMessagePrefix = Array("touchgate.fleet/".utf8)

    /// `message` (a batch head of the fleet log) signed by this store's signing key. Only
    /// fleet messages are signed here (they start with ``fleetMessagePrefix``), so the key's
    /// signatures on seals and on batch heads can never be taken for one another.
    public func signFleetMessage(_ message: [UInt8]) -> [UInt8] {
        precondition(message.starts(with: Self.fleetMessagePrefix))
        return signer.sign(message)
    }
}
