import FoundationEssentials

/// What ``AuditLog/checkState(_:key:)`` found.
struct StateCheck {
    /// The head row, when it is present, well formed and authentic under the key (either format).
    var authenticHead: AuditHead?
    /// What is wrong, in words that name no value; `nil` when the state is the one last written.
    var problem: String?
}

extension AuditLog {
    // MARK: Checking the state

    /// Checks, inside the caller's transaction, that the head is present, authentic, of the
    /// current format and names the last record, and that the state matches its digest.
    static func checkState(_ db: Database, key: AuditKey) throws -> StateCheck {
        if let problem = try foreignTriggerProblem(db) { return StateCheck(problem: problem) }
        guard let stored = try AuditHead.fetch(db) else {
            return StateCheck(problem: "the audit head row, which authenticates the state, is missing")
        }
        guard let head = stored else {
            return StateCheck(problem: "the audit head row has a field of the wrong type (edited by hand)")
        }
        guard head.isAuthentic(key: key) else {
            return StateCheck(problem: "the audit head row was altered (its MAC does not match)")
        }
        guard let digest = head.stateDigest else {
            return StateCheck(authenticHead: head,
                              problem: "the audit head does not cover the state yet (it was written by an older release and could not be upgraded)")
        }
        if let problem = try lastRecordProblem(db, head: head) {
            return StateCheck(authenticHead: head, problem: problem)
        }
        guard AuditMAC.equal(try StateDigest.compute(db), digest) else {
            return StateCheck(authenticHead: head,
                              problem: "the stored values do not match the digest in the audit head: the lockout, settings or enrollment state, the passphrase, an enrolled print or an item was edited outside touchgate, or put back from an older copy")
        }
        return StateCheck(authenticHead: head)
    }

    /// Touchgate defines no trigger. One added with sqlite3 would run inside touchgate's own
    /// writes (resetting a counter after each update, say), before the new digest is taken,
    /// and so be authenticated with it; any trigger is therefore tampering.
    static func foreignTriggerProblem(_ db: Database) throws -> String? {
        let names = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        guard let first = names.first else { return nil }
        return "the database holds a trigger touchgate did not create (\(AuditEntry.clean(first, maximumBytes: 64))\(names.count > 1 ? " and \(names.count - 1) more" : "")): it could rewrite the state inside touchgate's own writes"
    }

    /// Why `head` does not name the last stored record, or `nil` when it does.
    static func lastRecordProblem(_ db: Database, head: AuditHead) throws -> String? {
        guard let last = try Row.fetchOne(db, sql: "SELECT seq, mac FROM audit ORDER BY seq DESC LIMIT 1") else {
            guard head.headSequence == head.anchorSequence, AuditMAC.equal(head.headMAC, head.anchorMAC) else {
                return "the audit head names record \(head.headSequence) but the audit log holds no records"
            }
            return nil
        }
        let sequence: Int64 = last[0]
        let mac: [UInt8] = (last[1] as Data?).map(Array.init) ?? []
        if sequence > head.headSequence {
            return "the audit head names record \(head.headSequence) but records up to \(sequence) exist: the head (with the state) was replaced by an older copy, or records were forged"
        }
        if sequence < head.headSequence {
            return "the audit head names record \(head.headSequence) but the log ends at record \(sequence): records were removed"
        }
        guard AuditMAC.equal(mac, head.headMAC) else {
            return "record \(sequence) is not the one the audit head names: it was replaced"
        }
        return nil
    }

    /// The authentic head, or ``IntegrityError/stateTampered(detail:)``; call it before
    /// reading or changing the state, inside the same transaction.
    func requireAuthenticState(_ db: Database) throws -> AuditHead {
        let check = try Self.checkState(db, key: key)
        guard let head = check.authenticHead, check.problem == nil else {
            throw IntegrityError.stateTampered(detail: check.problem ?? "the audit head is unusable")
        }
        return head
    }

    /// After a change to the state made inside the caller's transaction (which first called
    /// ``requireAuthenticState(_:)`` and got `head`): stores the new digest in the head.
    /// A store bound to a TPM expects one more on its counter (``TPMCounter``): every change
    /// a rollback could undo moves it.
    func saveState(_ db: Database, head: AuditHead) throws {
        _ = try TPMCounter.advance(db)
        try head.with(stateDigest: try StateDigest.compute(db), key: key).save(db)
    }

    // MARK: Opening

    /// What opening the log has to write.
    private enum HeadPreparation {
        case nothing
        case createHead
        case upgrade(AuditHead)
        /// A head whose digest is of the first format (state rows and marker only).
        case coverItems(AuditHead)
        /// A head whose digest is of the second format (no prints).
        case coverPrints(AuditHead)
    }

    /// Creates the head of a fresh log and upgrades a first-format head; throws
    /// ``AuditError/wiped(detail:)`` for a trail gone while a vault exists.
    /// Reads first, and writes (re-checking inside `BEGIN IMMEDIATE`) only when needed.
    func prepareHead() throws {
        let needed = try database.writer.read { db in try headPreparation(db) }
        if case .nothing = needed { return }
        let upgradeRecord: AuditRecord? = try database.writer.writeWithoutTransaction { db in
            var record: AuditRecord?
            try db.inTransaction(.immediate) {
                switch try headPreparation(db) {
                case .nothing:
                    break
                case .createHead:
                    // A fresh log gets its head row now, so that a later missing row is evidence.
                    try AuditHead(headSequence: 0, headMAC: AuditMAC.genesis, anchorSequence: 0,
                                  anchorMAC: AuditMAC.genesis, stateDigest: try StateDigest.compute(db), key: key).save(db)
                    // and a new trail: a seal left from a log wiped before any vault existed
                    // would name records that are gone. prepareSeal() seals the new one.
                    try db.execute(sql: "DELETE FROM auditSeal")
                case let .upgrade(head):
                    try saveState(db, head: head)
                    record = try insert(AuditEntry(
                        event: .auditUpgrade, outcome: .success,
                        reason: "the audit head now authenticates the lockout, settings and enrollment state; the state found now was adopted as genuine (trust on first use)"), db)
                case let .coverItems(head):
                    try saveState(db, head: head)
                    record = try insert(AuditEntry(
                        event: .auditUpgrade, outcome: .success,
                        reason: "the audit head now also covers every item's version, the passphrase wrapping and the enrolled prints, so an older copy of one is refused; the items and prints found now were adopted as genuine (trust on first use)"), db)
                case let .coverPrints(head):
                    try saveState(db, head: head)
                    record = try insert(AuditEntry(
                        event: .auditUpgrade, outcome: .success,
                        reason: "the audit head now also covers the enrolled prints, so a print added, removed or put back from an older copy is refused; the prints found now were adopted as genuine (trust on first use)"), db)
                }
                return .commit
            }
            return record
        }
        if let upgradeRecord { journal.send(upgradeRecord) }
    }

    private func headPreparation(_ db: Database) throws -> HeadPreparation {
        let vaultExists = try MetaRecord.exists(db)
        let hasRecords = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM audit)") ?? false
        guard let stored = try AuditHead.fetch(db) else {
            if vaultExists { throw AuditError.wiped(detail: "the audit head row is missing") }
            return hasRecords ? .nothing : .createHead
        }
        // A malformed or forged head stays as it is: verify() and the state checks report it.
        guard let head = stored, head.isAuthentic(key: key) else { return .nothing }
        if vaultExists && !hasRecords && head.headSequence != head.anchorSequence {
            throw AuditError.wiped(detail: "every audit record was deleted (the head names record \(head.headSequence))")
        }
        if head.stateDigest == nil, try Self.lastRecordProblem(db, head: head) == nil {
            return .upgrade(head)
        }
        // Only a first-format digest that matches the state as it is (the current format's
        // domain differs, so it never matches one): any other mismatch is tampering, which
        // the state checks report. The first format reads the state rows alone: cheap.
        if let digest = head.stateDigest, try AuditMAC.equal(StateDigest.computeFirstFormat(db), digest),
           try Self.lastRecordProblem(db, head: head) == nil {
            return .coverItems(head)
        }
        // Likewise a second-format digest (issue 46: prints were not covered).
        if let digest = head.stateDigest, try AuditMAC.equal(StateDigest.computeSecondFormat(db), digest),
           try Self.lastRecordProblem(db, head: head) == nil {
            return .coverPrints(head)
        }
        return .nothing
    }
}
