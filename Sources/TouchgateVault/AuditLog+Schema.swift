import FoundationEssentials

extension AuditLog {
    /// The audit tables. `audit` holds the chain; `auditHead` is a single row with the
    /// last record's sequence and MAC (the head), the last pruned record's sequence and
    /// MAC (the anchor) and the digest of the authenticated state (``StateDigest``), MACed
    /// together so that a removed tail, a moved anchor or an edited state shows.
    static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3-audit") { db in
            // STRICT: a hand edit cannot slip a differently typed value past the decoder.
            try db.execute(sql: """
                CREATE TABLE audit (
                    seq INTEGER PRIMARY KEY,
                    wallTime REAL NOT NULL,
                    bootTime REAL NOT NULL,
                    bootID TEXT NOT NULL,
                    uid INTEGER NOT NULL,
                    login TEXT NOT NULL,
                    vaultUser TEXT,
                    event TEXT NOT NULL,
                    item TEXT,
                    outcome TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    prevMAC BLOB NOT NULL,
                    mac BLOB NOT NULL
                ) STRICT;
                CREATE INDEX audit_wallTime ON audit (wallTime);
                CREATE TABLE auditHead (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    headSeq INTEGER NOT NULL,
                    headMAC BLOB NOT NULL,
                    anchorSeq INTEGER NOT NULL,
                    anchorMAC BLOB NOT NULL,
                    mac BLOB NOT NULL
                ) STRICT;
                """)
        }
        migrator.registerMigration("v4-audit-state") { db in
            // The head also covers the authenticated state (vault_state and templates_sealed).
            // NULL marks a head of the first format; AuditLog.init upgrades it once.
            try db.execute(sql: "ALTER TABLE auditHead ADD COLUMN stateDigest BLOB")
        }
        migrator.registerMigration("v5-audit-public") { db in
            // The public chain (AuditSeal): each record's link and its predecessor's, NULL in
            // records written before it existed until AuditLog.init links them, once; and
            // the signed head.
            try db.execute(sql: """
                ALTER TABLE audit ADD COLUMN prevChain BLOB;
                ALTER TABLE audit ADD COLUMN chain BLOB;
                CREATE TABLE auditSeal (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    trail BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    chain BLOB NOT NULL,
                    publicKey BLOB NOT NULL,
                    signature BLOB NOT NULL
                ) STRICT;
                """)
        }
        migrator.registerMigration("v6-audit-shipped") { db in
            // How far each trail was shipped to the fleet collector (`touchgate audit ship`):
            // the last sequence a collector's transaction committed. Editing it only makes a
            // shipment repeat records (inserted once) or leave a gap the collector reports.
            try db.execute(sql: """
                CREATE TABLE auditShipped (
                    trail BLOB PRIMARY KEY,
                    seq INTEGER NOT NULL
                ) STRICT;
                """)
        }
        migrator.registerMigration("v7-audit-fleet-checkpoint") { db in
            // The newest checkpoint of the fleet log this store's shipments accepted: the
            // next shipment demands a proof that the collector's log grew from it.
            try db.execute(sql: """
                CREATE TABLE auditFleetCheckpoint (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    size INTEGER NOT NULL,
                    note TEXT NOT NULL
                ) STRICT;
                """)
        }
        migrator.registerMigration("v9-audit-item") { db in
            // An item's newest records, found without reading every record of the period:
            // each SSH signature asks for its key's last one (the reuse window serves the same
            // destination only), and an agent makes hundreds within the window.
            try db.execute(sql: "CREATE INDEX audit_item ON audit (item, seq)")
        }
    }

    /// The columns of `audit` in the order ``decode(_:)`` reads them.
    static let recordColumns = "seq, wallTime, bootTime, bootID, uid, login, vaultUser, event, item, outcome, reason, prevMAC, mac"
    /// ``recordColumns`` and the public chain's columns, as ``decodeLinked(_:)`` reads them.
    static let linkedColumns = recordColumns + ", prevChain, chain"

    /// The stored fields and MAC of a row selected with ``recordColumns``; `nil` when a
    /// field has the wrong type (the table was edited by hand).
    static func decode(_ row: Row) -> (fields: AuditMAC.Fields, mac: [UInt8])? {
        func integer(_ index: Int) -> Int64? {
            if case let .int64(value) = (row[index] as DatabaseValue) { return value }
            return nil
        }
        func double(_ index: Int) -> Double? {
            switch (row[index] as DatabaseValue) {
            case let .double(value): return value
            case let .int64(value): return Double(value)
            default: return nil
            }
        }
        func text(_ index: Int) -> String? {
            if case let .string(value) = (row[index] as DatabaseValue) { return value }
            return nil
        }
        func optionalText(_ index: Int) -> String?? {
            switch (row[index] as DatabaseValue) {
            case .null: return .some(nil)
            case let .string(value): return .some(value)
            default: return nil
            }
        }
        func blob(_ index: Int) -> [UInt8]? {
            if case let .blob(value) = (row[index] as DatabaseValue) { return Array(value) }
            return nil
        }
        guard let sequence = integer(0), let unixTime = double(1), let bootTime = double(2),
              let bootID = text(3), let uid = integer(4), let login = text(5),
              let vaultUser = optionalText(6), let event = text(7), let item = optionalText(8),
              let outcome = text(9), let reason = text(10), let previousMAC = blob(11), let mac = blob(12)
        else { return nil }
        let fields = AuditMAC.Fields(
            sequence: sequence, unixTime: unixTime, bootTime: bootTime, bootID: bootID, uid: uid,
            loginName: login, vaultUser: vaultUser, event: event, item: item, outcome: outcome,
            reason: reason, previousMAC: previousMAC)
        return (fields, mac)
    }

    /// The public chain's columns of a row selected with ``linkedColumns`` (after the record's):
    /// `.some(nil)` for a record not linked yet, `nil` for a value of the wrong type.
    static func decodeLinks(_ row: Row) -> (previous: [UInt8], chain: [UInt8])?? {
        switch ((row[13] as DatabaseValue), (row[14] as DatabaseValue)) {
        case (.null, .null): return .some(nil)
        case let (.blob(previous), .blob(chain)): return (Array(previous), Array(chain))
        default: return nil
        }
    }

    /// The public record for stored fields.
    static func record(_ fields: AuditMAC.Fields, mac: [UInt8],
                       links: (previous: [UInt8], chain: [UInt8])? = nil) -> AuditRecord {
        AuditRecord(
            sequence: fields.sequence, unixTime: fields.unixTime, bootTime: fields.bootTime,
            bootID: fields.bootID, uid: UInt32(truncatingIfNeeded: fields.uid), loginName: fields.loginName,
            vaultUser: fields.vaultUser, event: AuditEvent(stored: fields.event), item: fields.item,
            outcome: AuditOutcome(stored: fields.outcome), reason: fields.reason,
            previousMAC: fields.previousMAC, mac: mac, previousChain: links?.previous, chain: links?.chain)
    }
}

/// The `auditHead` row.
struct AuditHead {
    /// Sequence of the last record appended (0 before the first).
    var headSequence: Int64
    /// MAC of that record (genesis before the first).
    var headMAC: [UInt8]
    /// Sequence of the last pruned record (0 when nothing was pruned).
    var anchorSequence: Int64
    /// MAC of that record (genesis when nothing was pruned): the first kept record links to it.
    var anchorMAC: [UInt8]
    /// The ``StateDigest`` of `vault_state` and `templates_sealed` as touchgate last left
    /// them; `nil` in a head of the first format, written before the state was authenticated.
    var stateDigest: [UInt8]?
    /// The stored MAC over the fields above (see ``AuditMAC/state(headSequence:headMAC:anchorSequence:anchorMAC:stateDigest:key:)``).
    var mac: [UInt8]

    /// A head whose MAC is computed with `key`.
    init(headSequence: Int64, headMAC: [UInt8], anchorSequence: Int64, anchorMAC: [UInt8],
         stateDigest: [UInt8]?, key: AuditKey) {
        self.headSequence = headSequence
        self.headMAC = headMAC
        self.anchorSequence = anchorSequence
        self.anchorMAC = anchorMAC
        self.stateDigest = stateDigest
        self.mac = AuditMAC.state(headSequence: headSequence, headMAC: headMAC, anchorSequence: anchorSequence,
                                  anchorMAC: anchorMAC, stateDigest: stateDigest, key: key)
    }

    private init(headSequence: Int64, headMAC: [UInt8], anchorSequence: Int64, anchorMAC: [UInt8],
                 stateDigest: [UInt8]?, mac: [UInt8]) {
        self.headSequence = headSequence
        self.headMAC = headMAC
        self.anchorSequence = anchorSequence
        self.anchorMAC = anchorMAC
        self.stateDigest = stateDigest
        self.mac = mac
    }

    /// Whether the stored MAC matches the fields under `key`.
    func isAuthentic(key: AuditKey) -> Bool {
        AuditMAC.equal(mac, AuditMAC.state(headSequence: headSequence, headMAC: headMAC, anchorSequence: anchorSequence,
                                           anchorMAC: anchorMAC, stateDigest: stateDigest, key: key))
    }

    /// The same head moved to another last record (an append), MACed with `key`; the
    /// anchor and the state digest are carried over unchanged.
    func advanced(to sequence: Int64, mac recordMAC: [UInt8], key: AuditKey) -> AuditHead {
        AuditHead(headSequence: sequence, headMAC: recordMAC, anchorSequence: anchorSequence,
                  anchorMAC: anchorMAC, stateDigest: stateDigest, key: key)
    }

    /// The same head with another state digest, MACed with `key`.
    func with(stateDigest digest: [UInt8], key: AuditKey) -> AuditHead {
        AuditHead(headSequence: headSequence, headMAC: headMAC, anchorSequence: anchorSequence,
                  anchorMAC: anchorMAC, stateDigest: digest, key: key)
    }

    /// The stored row: `nil` if absent, `.some(nil)` if present but malformed.
    static func fetch(_ db: Database) throws -> AuditHead?? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT headSeq, headMAC, anchorSeq, anchorMAC, mac, stateDigest FROM auditHead WHERE id = 1
            """) else {
            return nil
        }
        guard case let .int64(headSequence) = (row[0] as DatabaseValue),
              case let .blob(headMAC) = (row[1] as DatabaseValue),
              case let .int64(anchorSequence) = (row[2] as DatabaseValue),
              case let .blob(anchorMAC) = (row[3] as DatabaseValue),
              case let .blob(mac) = (row[4] as DatabaseValue)
        else { return .some(nil) }
        let stateDigest: [UInt8]?
        switch (row[5] as DatabaseValue) {
        case .null: stateDigest = nil
        case let .blob(digest): stateDigest = Array(digest)
        default: return .some(nil)
        }
        return AuditHead(headSequence: headSequence, headMAC: Array(headMAC), anchorSequence: anchorSequence,
                         anchorMAC: Array(anchorMAC), stateDigest: stateDigest, mac: Array(mac))
    }

    /// Inserts or replaces the row.
    func save(_ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO auditHead (id, headSeq, headMAC, anchorSeq, anchorMAC, stateDigest, mac)
            VALUES (1, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET headSeq = excluded.headSeq, headMAC = excluded.headMAC,
                anchorSeq = excluded.anchorSeq, anchorMAC = excluded.anchorMAC,
                stateDigest = excluded.stateDigest, mac = excluded.mac
            """, arguments: [headSequence, Data(headMAC), anchorSequence, Data(anchorMAC),
                             stateDigest.map { Data($0) }, Data(mac)])
    }
}
