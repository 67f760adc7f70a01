public import FoundationEssentials

extension AuditLog {
    /// Starts a new audit trail after the old one was lost, and records the loss; only for
    /// the repair command (`touchgate repair`), after ``AuditError/wiped(detail:)`` or
    /// ``AuditError/keyMissing(path:)``.
    ///
    /// Creates a new random `audit.key` (replacing any key file there), then in one
    /// transaction removes every remaining audit record (without the lost key they can no
    /// longer be verified; export them first if they are wanted) the head row and
    /// the seal (``AuditSeal``: the new trail gets a new id), writes a fresh head, and appends the new trail's first record: event `integrity.failure`,
    /// outcome `error`, saying that the previous trail was lost, how many records were
    /// discarded, and `reason`. Numbering continues after the highest sequence still
    /// visible, so journald copies of old and new records never share a number. The head
    /// adopts the state as it is now: follow with ``StateStore/reseal(_:templatesSealed:recording:)``
    /// to set it to chosen values. ``verify()`` then reports the new trail intact.
    ///
    /// When only the head row is damaged and the key is intact, ``StateStore/reseal(_:templatesSealed:recording:)``
    /// repairs it while keeping every record; prefer that. Run this while no other
    /// touchgate process uses the store: one still holding the old key would append
    /// records the new head does not follow (``verify()`` would then report them). If the
    /// transaction fails after the key was replaced, the store is left wiped and this can
    /// simply be run again.
    /// - Returns: the new log.
    /// - Throws: ``StoreError`` when the key file cannot be written, GRDB errors.
    public static func restart(database: TouchgateDatabase, journal: AuditJournal = .system,
                               now: @escaping @Sendable () -> Date = { Date() },
                               vaultUser: String? = nil, reason: String) throws -> AuditLog {
        let key = try AuditKey.replace(path: AuditKey.path(in: database.location))
        let log = AuditLog(database: database, journal: journal, now: now, key: key,
                           signer: try AuditSigner.loadOrCreate(in: database.location))
        let record = try database.writeImmediately { db in
            let discarded = try Int.fetchOne(db, sql: "SELECT count(*) FROM audit") ?? 0
            let lastRecord = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM audit") ?? 0
            let lastHead = try Int64.fetchOne(db, sql: "SELECT headSeq FROM auditHead WHERE typeof(headSeq) = 'integer'") ?? 0
            let lastSeen = max(lastRecord, lastHead, 0)
            try db.execute(sql: "DELETE FROM audit")
            try db.execute(sql: "DELETE FROM auditHead")
            // A new trail (a new id, a public chain from genesis): a collector sees where it began.
            try db.execute(sql: "DELETE FROM auditSeal")
            try AuditHead(headSequence: lastSeen, headMAC: AuditMAC.genesis, anchorSequence: lastSeen,
                          anchorMAC: AuditMAC.genesis, stateDigest: try StateDigest.compute(db), key: key).save(db)
            let lost = discarded == 0
                ? "no record was left"
                : "\(discarded) records that can no longer be verified were discarded"
            return try log.insert(AuditEntry(
                event: .integrityFailure, outcome: .error, vaultUser: vaultUser,
                reason: "audit trail restarted: the previous trail (up to record \(lastSeen)) was lost; \(lost): \(reason)"), db)
        }
        journal.send(record)
        return log
    }
}
