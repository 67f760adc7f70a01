import FoundationEssentials
import TouchgatePolicy

extension AuditLog {
    /// The seal as stored, for an export taken in the same snapshot as its records.
    /// - Throws: ``AuditError/malformedRecord(sequence:)`` (sequence 0) for a malformed seal row.
    public func seal() throws -> AuditSeal? {
        try database.writer.read { db in try Self.storedSeal(db) }
    }

    static func storedSeal(_ db: Database) throws -> AuditSeal? {
        switch try AuditSeal.fetch(db) {
        case .none: return nil
        case .some(.none): throw AuditError.malformedRecord(sequence: 0)
        case .some(.some(let seal)): return seal
        }
    }

    /// What the next record links to, inside an append's transaction: the trail and the
    /// previous link, and whether the seal moves forward with it.
    ///
    /// Only a seal this log signed itself, naming the record just before `sequence`, is
    /// built on, from its own signed link. Anything else (a seal edited, replaced, deleted
    /// or left behind) stays as evidence: the record is linked to the last stored link so
    /// that the chain stays readable, but nothing new is signed over it.
    func chainBase(_ db: Database, before sequence: Int64) throws -> (trail: [UInt8], previous: [UInt8], sealed: Bool) {
        // Read only when the seal is not built on (evidence kept).
        func lastLink() throws -> [UInt8] {
            try Data.fetchOne(db, sql: "SELECT chain FROM audit WHERE seq = ? AND typeof(chain) = 'blob'",
                              arguments: [sequence - 1]).map(Array.init) ?? AuditSeal.genesis
        }
        let noTrail = [UInt8](repeating: 0, count: AuditSeal.trailLength)
        switch try AuditSeal.fetch(db) {
        case .none:
            let empty = try Int.fetchOne(db, sql: "SELECT count(*) FROM audit") == 0
            // No records and no seal: a fresh trail (new, or restarted).
            if empty { return (AuditSeal.newTrail(), AuditSeal.genesis, true) }
            return (noTrail, try lastLink(), false)
        case .some(.none):
            return (noTrail, try lastLink(), false)
        case .some(.some(let seal)):
            if seal.sequence == sequence - 1, sealMemo.isLastSigned(seal) || seal.isSigned(by: signer.publicKey) {
                return (seal.trail, seal.chain, true)
            }
            return (seal.trail, try lastLink(), false)
        }
    }

    /// Takes over a trail sealed by another key (a store moved in from elsewhere): the
    /// seal, checked against the key that signed it and required to name the last record,
    /// is signed again with this log's key, and `entry` is appended with both keys named
    /// in its reason, in one transaction. From then on only this log's key vouches for it.
    /// - Throws: ``AuditError/chainBroken(at:reason:)`` when the seal is missing, forged or
    ///   left behind; GRDB errors.
    @discardableResult
    public func adoptSeal(_ entry: AuditEntry) throws -> AuditRecord {
        let record = try database.writeImmediately { db -> AuditRecord in
            let last = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM audit") ?? 0
            guard case .some(.some(let seal)) = try AuditSeal.fetch(db), seal.isSigned(by: seal.publicKey),
                  seal.sequence == last else {
                throw AuditError.chainBroken(at: last, reason: "the audit seal is missing, forged or does not name the last record")
            }
            try AuditSeal(trail: seal.trail, sequence: seal.sequence, chain: seal.chain, signer: signer).save(db)
            var entry = entry
            let keys = "the trail is now signed by key \(Hex.encode(signer.publicKey)) (was \(Hex.encode(seal.publicKey)))"
            entry.reason = entry.reason.isEmpty ? keys : entry.reason + "; " + keys
            return try insert(entry, db)
        }
        journal.send(record)
        return record
    }

    // MARK: Opening

    /// Links records that have no public link yet and seals them, once: a trail written
    /// before the public chain existed is continued (from its first stored record), not
    /// restarted, and an `audit.upgrade` record says so. When the signing key file was
    /// missing and has just been made afresh, a seal the old key signed is signed again by
    /// the new one and an `integrity.failure` record says so, with the key to register:
    /// a central verifier holding the old key sees every head from then on fail.
    func prepareSeal(signerWasMissing: Bool) throws {
        let needed = try database.writer.read { db in try sealPreparation(db, signerWasMissing: signerWasMissing) }
        guard needed != nil else { return }
        let record: AuditRecord? = try database.writeImmediately { db -> AuditRecord? in
            switch try sealPreparation(db, signerWasMissing: signerWasMissing) {
            case .none:
                return nil
            case .link(let seal):
                let linked = try link(db, after: seal)
                guard linked > 0 else { return nil }
                return try insert(AuditEntry(
                    event: .auditUpgrade, outcome: .success,
                    reason: "\(linked) records written before the public chain existed were linked and signed: "
                        + "the trail can now be verified with its public key alone"), db)
            case .resign(let seal):
                try AuditSeal(trail: seal.trail, sequence: seal.sequence, chain: seal.chain, signer: signer).save(db)
                return try insert(AuditEntry(
                    event: .integrityFailure, outcome: .error,
                    reason: "the audit signing key (audit-sign.key) was missing; a new one was made and signs this "
                        + "trail from record \(seal.sequence + 1) on: register its public key "
                        + Hex.encode(signer.publicKey)), db)
            }
        }
        if let record { journal.send(record) }
    }

    /// A store whose own signing key was left beside it when the key moved to the
    /// machine (touchgated's stores before one key signed them all): a seal that key
    /// signed over the last record is signed again by the machine's key, an
    /// `audit.upgrade` record names both, and the store's own key file is removed. A seal
    /// that key did not sign, or records after it, leave everything as evidence.
    func adoptLeftBehindKey() throws {
        guard let old = try AuditSigner.leftBehind(in: database.location) else { return }
        let ownFile = database.location.directory.appendingPathComponent(AuditSigner.fileName).path
        let record: AuditRecord? = try database.writeImmediately { db -> AuditRecord? in
            let last = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM audit") ?? 0
            guard case .some(.some(let seal)) = try AuditSeal.fetch(db), AuditMAC.equal(seal.publicKey, old.publicKey),
                  seal.isSigned(by: old.publicKey), seal.sequence == last else { return nil }
            try AuditSeal(trail: seal.trail, sequence: seal.sequence, chain: seal.chain, signer: signer).save(db)
            return try insert(AuditEntry(
                event: .auditUpgrade, outcome: .success,
                reason: "the machine's audit signing key \(Hex.encode(signer.publicKey)) now signs this trail (was this "
                    + "store's own key \(Hex.encode(old.publicKey))): register the machine's key"), db)
        }
        // Once adopted, the old key has nothing left to vouch for; otherwise it stays, as evidence.
        if let record {
            journal.send(record)
            try? FileManager.default.removeItem(atPath: ownFile)
        }
    }

    private enum SealPreparation: Equatable {
        /// Link the unlinked records after this seal (nil: from genesis, a new trail id).
        case link(AuditSeal?)
        /// Sign this seal again with the new key.
        case resign(AuditSeal)
    }

    private func sealPreparation(_ db: Database, signerWasMissing: Bool) throws -> SealPreparation? {
        let unlinked = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM audit WHERE chain IS NULL")
        switch try AuditSeal.fetch(db) {
        case .none:
            // Records already linked but no seal: it was deleted. That stays as evidence.
            let linked = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM audit WHERE chain IS NOT NULL)") ?? false
            return linked ? nil : .link(nil)
        case .some(.none):
            return nil
        case .some(.some(let seal)):
            let lastSequence = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM audit") ?? seal.sequence
            if signerWasMissing, !AuditMAC.equal(seal.publicKey, signer.publicKey),
               seal.isSigned(by: seal.publicKey), unlinked == nil, lastSequence == seal.sequence {
                return .resign(seal)
            }
            // Records an older release appended after the seal, and only those, are linked on.
            if let unlinked, unlinked == seal.sequence + 1, seal.isSigned(by: signer.publicKey) {
                return .link(seal)
            }
            return nil
        }
    }

    /// Links every unlinked record after `seal` (nil: all, as a new trail) and seals the
    /// last; returns how many.
    private func link(_ db: Database, after seal: AuditSeal?) throws -> Int {
        let trail = seal?.trail ?? AuditSeal.newTrail()
        var previous = seal?.chain ?? AuditSeal.genesis
        var last = seal?.sequence ?? 0
        var count = 0
        let rows = try Row.fetchAll(db, sql: "SELECT \(Self.recordColumns) FROM audit WHERE seq > ? ORDER BY seq",
                                    arguments: [seal?.sequence ?? Int64.min])
        for row in rows {
            guard let (fields, mac) = Self.decode(row) else {
                throw AuditError.malformedRecord(sequence: row[0] as Int64)
            }
            let chain = AuditSeal.link(trail: trail, previous: previous, fields: fields, mac: mac)
            try db.execute(sql: "UPDATE audit SET prevChain = ?, chain = ? WHERE seq = ?",
                           arguments: [Data(previous), Data(chain), fields.sequence])
            previous = chain
            last = fields.sequence
            count += 1
        }
        if seal == nil {
            // An empty log is sealed at its head, so that its first record follows on.
            last = max(last, try Int64.fetchOne(db, sql: "SELECT headSeq FROM auditHead WHERE typeof(headSeq) = 'integer'") ?? 0)
        }
        try AuditSeal(trail: trail, sequence: last, chain: previous, signer: signer).save(db)
        return count
    }

    // MARK: Verifying

    /// Why the public chain over the rows of `db` does not lead to an authentic seal, or nil.
    /// Called by ``verify()`` once the MAC chain is known intact (so sequences are gapless
    /// from the anchor on); the first stored record's previous link is taken as given
    /// (records before it were pruned).
    func publicChainProblem(_ db: Database, sealedByItsOwnKey: Bool = false) throws -> (sequence: Int64, reason: String)? {
        let seal: AuditSeal
        switch try AuditSeal.fetch(db) {
        case .none: return (0, "the signed head of the public chain (the audit seal) is missing")
        case .some(.none): return (0, "the audit seal has a field of the wrong type (edited by hand)")
        case .some(.some(let stored)): seal = stored
        }
        let key = sealedByItsOwnKey ? seal.publicKey : signer.publicKey
        guard seal.isSigned(by: key) else {
            return (seal.sequence, "the audit seal is not signed by this trail's signing key (audit-sign.key)")
        }
        var verifier = AuditChainVerifier(publicKey: key)
        let rows = try Row.fetchCursor(db, sql: "SELECT \(Self.linkedColumns) FROM audit ORDER BY seq")
        while let row = try rows.next() {
            guard let (fields, mac) = Self.decode(row), let stored = Self.decodeLinks(row), let links = stored else {
                return (row[0] as Int64, "record \(row[0] as Int64) has no public link")
            }
            if let problem = verifier.add(Self.record(fields, mac: mac, links: links), trail: seal.trail) {
                return problem
            }
        }
        return verifier.finish(seal: seal)
    }
}
