import FoundationEssentials

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
        try database.writer.read { db in try Self.eachRecord(db, query, body) }
    }

    /// ``forEachRecord(_:_:)`` with each record's public links, and the seal that vouches
    /// for them (``AuditSeal``), all from one snapshot: what `touchgate audit export` writes.
    /// - Throws: as ``forEachRecord(_:_:)``; ``AuditError/malformedRecord(sequence:)``
    ///   with sequence 0 for a malformed seal row.
    /// `sealed` gets the seal first (before any record), so that each record can be
    /// written with its trail.
    public func export(_ query: AuditQuery = AuditQuery(), sealed: (AuditSeal?) throws -> Void = { _ in },
                       _ body: (AuditRecord) throws -> Void) throws -> (count: Int, seal: AuditSeal?) {
        try database.writer.read { db in
            let seal = try Self.storedSeal(db)
            try sealed(seal)
            return (try Self.eachRecord(db, query, body), seal)
        }
    }

    private static func eachRecord(_ db: Database, _ query: AuditQuery, _ body: (AuditRecord) throws -> Void) throws -> Int {
        let (condition, arguments) = query.condition
        let direction = query.order == .oldestFirst ? "ASC" : "DESC"
        var sql = "SELECT \(linkedColumns) FROM audit \(condition) ORDER BY seq \(direction)"
        var allArguments = arguments
        if let limit = query.limit {
            // The most recent `limit` matching records, then in the order asked for.
            sql = "SELECT * FROM (SELECT \(linkedColumns) FROM audit \(condition) ORDER BY seq DESC LIMIT ?) "
                + "ORDER BY seq \(direction)"
            allArguments += [max(0, limit)]
        }
        // A query with a limit reads few rows: all at once, from a cached statement (an agent
        // asks for a key's last record at every signature, and preparing it was most of the
        // cost). Without a limit, a cursor, so that a whole trail is never held in memory.
        let rows = if query.limit != nil {
            RowCursor(rows: try Row.fetchAll(db, sql: sql, arguments: allArguments))
        } else {
            try Row.fetchCursor(db, sql: sql, arguments: allArguments)
        }
        var count = 0
        while let row = try rows.next() {
            guard let (fields, mac) = decode(row), let links = decodeLinks(row) else {
                throw AuditError.malformedRecord(sequence: row[0] as Int64)
            }
            try body(record(fields, mac: mac, links: links))
            count += 1
        }
        return count
    }

    /// How many stored records `query` selects, ignoring its ``AuditQuery/limit``: with
    /// ``records(_:)`` it tells how many a limit left out.
    public func count(_ query: AuditQuery = AuditQuery()) throws -> Int {
        let (condition, arguments) = query.condition
        return try database.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM audit \(condition)", arguments: arguments) ?? 0
        }
    }

    /// The sequence number of the newest record, or 0 for an empty trail. It only grows:
    /// pruning removes the oldest records, never the newest.
    public func lastSequence() throws -> Int64 {
        try database.writer.read { db in
            try Int64.fetchOne(db, sql: "SELECT max(seq) FROM audit") ?? 0
        }
    }
}
