
extension AuditLog {
    /// Checks the whole chain and the head row, streaming records in sequence order.
    ///
    /// Finds the first record that is missing (a gap), out of place, does not link to
    /// its predecessor (insertion, deletion, reordering), or whose MAC does not match its
    /// fields (an edit or a forgery); then checks that the last record is the one the
    /// head row names (a removed tail); finally that the state in `vault_state` and the
    /// vault's `templates_sealed` marker match the digest in the head (an edited or
    /// swapped state, reported after the last record). Reads one snapshot; memory use does
    /// not grow with the number of records. See ``AuditLog`` for what cannot be detected.
    ///
    /// The seal must be signed by this log's own key; `sealedByItsOwnKey` accepts the key
    /// the seal names instead, for a trail moved in from another store before
    /// ``adoptSeal(_:)`` takes it over.
    public func verify(sealedByItsOwnKey: Bool = false) throws -> AuditVerification {
        try database.writer.read { db in try verify(db, sealedByItsOwnKey: sealedByItsOwnKey) }
    }

    func verify(_ db: Database, sealedByItsOwnKey: Bool = false) throws -> AuditVerification {
        let firstSequence = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM audit")
        guard let storedHead = try AuditHead.fetch(db) else {
            return .broken(at: firstSequence ?? 1, reason: "the audit head row is missing")
        }
        guard let head = storedHead, head.isAuthentic(key: key) else {
            return .broken(at: firstSequence ?? 1, reason: "the audit head row was altered")
        }
        var expected = head.anchorSequence + 1
        var previous = head.anchorMAC
        var count = 0
        let rows = try Row.fetchCursor(db, sql: "SELECT \(Self.recordColumns) FROM audit ORDER BY seq")
        while let row = try rows.next() {
            let sequence = row[0] as Int64
            guard let (fields, mac) = Self.decode(row) else {
                return .broken(at: sequence, reason: "a field has the wrong type")
            }
            if sequence < expected {
                return .broken(at: sequence, reason: "record \(sequence) lies before the prune anchor (record \(head.anchorSequence)): restored or inserted")
            }
            if sequence > expected {
                return .broken(at: expected, reason: sequence == expected + 1
                               ? "record \(expected) is missing"
                               : "records \(expected)…\(sequence - 1) are missing")
            }
            guard AuditMAC.equal(fields.previousMAC, previous) else {
                return .broken(at: sequence, reason: "record \(sequence) does not follow record \(sequence - 1): inserted, replaced or reordered")
            }
            guard AuditMAC.equal(mac, AuditMAC.record(fields, key: key)) else {
                return .broken(at: sequence, reason: "record \(sequence) was altered or forged (its MAC does not match)")
            }
            previous = mac
            expected += 1
            count += 1
        }
        let last = expected - 1
        if last < head.headSequence {
            return .broken(at: last + 1, reason: last + 1 == head.headSequence
                           ? "record \(head.headSequence), the last one written, is missing: the tail was removed"
                           : "records \(last + 1)…\(head.headSequence) are missing: the tail was removed")
        }
        if last > head.headSequence {
            return .broken(at: head.headSequence + 1, reason: "record \(head.headSequence + 1) was added after the last genuine append")
        }
        guard AuditMAC.equal(previous, head.headMAC) else {
            return .broken(at: last, reason: "record \(last) is not the one last written")
        }
        // The public chain leads to the signed head: what a verifier without audit.key checks.
        if let problem = try publicChainProblem(db, sealedByItsOwnKey: sealedByItsOwnKey) {
            return .broken(at: problem.sequence, reason: problem.reason)
        }
        // Every record is intact; what follows concerns the state kept beside them.
        if let problem = try Self.foreignTriggerProblem(db) {
            return .broken(at: last + 1, reason: problem + "; run `touchgate repair`")
        }
        guard let digest = head.stateDigest else {
            return .broken(at: last + 1, reason: "the audit head does not cover the lockout, settings and enrollment state (an older format that was not upgraded); run `touchgate repair`")
        }
        guard AuditMAC.equal(try StateDigest.compute(db), digest) else {
            return .broken(at: last + 1, reason: "the lockout, settings or enrollment state, the passphrase, an enrolled print or an item was edited outside touchgate or put back from an older copy (it does not match the digest in the audit head); run `touchgate repair`")
        }
        return .intact(count: count)
    }
}
