public import FoundationEssentials

extension AuditLog {
    /// The latest cutoff ``prune(before:keepingYears:evenUnshipped:vaultUser:)`` accepts:
    /// `years` calendar years (UTC) before `now`, never fewer than ``retentionYears``.
    public static func retentionCutoff(now: Date, years: Int = retentionYears) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        // GMT by value: without ICU no zone is known by name (TimeZone(identifier: "UTC") is nil).
        calendar.timeZone = .gmt
        return calendar.date(byAdding: .year, value: -max(years, retentionYears), to: now)!
    }

    /// Removes the oldest records, those written before `cutoff`, and records that it did.
    ///
    /// Only a prefix of the chain is removed: it stops at the first record at or after
    /// `cutoff`, even if later records carry older wall times (a clock set back). The
    /// last removed record's sequence and MAC become the anchor in the MACed head row,
    /// so the remaining chain still verifies and a restored or forged old record is
    /// detected. The removal and an `audit.prune` record happen in one transaction; the
    /// record's reason says how many records went and the last one's sequence
    /// (``AuditPruneSummary`` reads it back), so a public verification of the rest can
    /// tell a pruned beginning from a cut one.
    ///
    /// The retention cannot be shortened: nothing here removes a record younger than
    /// ``retentionYears`` (HIPAA's six years), whoever asks.
    ///
    /// - Parameters:
    ///   - cutoff: remove records written before this instant.
    ///   - years: the retention in force, in years; less than ``retentionYears`` counts as
    ///     ``retentionYears`` (a longer one is root's choice on a daemon).
    ///   - evenUnshipped: also remove records a fleet collector has not confirmed yet.
    ///   - vaultUser: who asked, for the `audit.prune` record.
    /// - Returns: how many records were removed.
    /// - Throws: ``AuditError/withinRetention(requested:oldestAllowed:years:)`` when `cutoff`
    ///   lies inside the retention (an `audit.prune` record with outcome `denied` is
    ///   written); ``AuditError/chainBroken(at:reason:)`` when the log does not verify
    ///   (nothing is removed, an `audit.prune` `error` record is written);
    ///   ``AuditError/unshipped(through:shipped:)`` when this store ships to a fleet
    ///   collector (`audit ship` ran at least once) and the cutoff would remove records past
    ///   the collector's cursor, without `evenUnshipped` (nothing is removed, a `denied`
    ///   record is written).
    @discardableResult
    public func prune(before cutoff: Date, keepingYears years: Int = AuditLog.retentionYears,
                      evenUnshipped: Bool = false, vaultUser: String? = nil) throws -> Int {
        let years = max(years, Self.retentionYears)
        let oldestAllowed = Self.retentionCutoff(now: now(), years: years)
        let cutoffText = cutoff.formatted(.iso8601)
        if cutoff > oldestAllowed {
            try append(.auditPrune, .denied, vaultUser: vaultUser,
                       reason: "refused cutoff \(cutoffText): inside the \(years)-year retention")
            throw AuditError.withinRetention(requested: cutoff, oldestAllowed: oldestAllowed, years: years)
        }
        enum Outcome {
            case pruned(Int, AuditRecord)
            case broken(Int64, String)
            case unshipped(Int64, Int64)
        }
        let outcome: Outcome = try database.writer.writeWithoutTransaction { db in
            var outcome: Outcome?
            try db.inTransaction(.immediate) {
                if case let .broken(at, reason) = try verify(db) {
                    outcome = .broken(at, reason)
                    return .rollback
                }
                // verify() passed, so the head row exists, is authentic, and the chain is whole.
                guard let stored = try AuditHead.fetch(db), let head = stored else {
                    fatalError("audit head vanished inside the prune transaction")
                }
                let firstKept = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM audit WHERE wallTime >= ?",
                                                   arguments: [cutoff.timeIntervalSince1970])
                let lastRemoved = (firstKept ?? head.headSequence + 1) - 1
                if !evenUnshipped, let shipped = try shippedCursor(db), lastRemoved > shipped {
                    // The collector would never get them: a gap its verify reports as broken.
                    outcome = .unshipped(lastRemoved, shipped)
                    return .rollback
                }
                var removed = 0
                if lastRemoved > head.anchorSequence {
                    let anchorMAC = try Data.fetchOne(db, sql: "SELECT mac FROM audit WHERE seq = ?", arguments: [lastRemoved])!
                    try db.execute(sql: "DELETE FROM audit WHERE seq <= ?", arguments: [lastRemoved])
                    removed = db.changesCount
                    try AuditHead(headSequence: head.headSequence, headMAC: head.headMAC, anchorSequence: lastRemoved,
                                  anchorMAC: Array(anchorMAC), stateDigest: head.stateDigest, key: key).save(db)
                }
                var reason = removed == 0
                    ? "nothing before \(cutoffText)"
                    : AuditPruneSummary(removed: removed, through: lastRemoved).reason + ", before \(cutoffText)"
                if removed > 0, evenUnshipped, let shipped = try shippedCursor(db), lastRemoved > shipped {
                    reason += "; records \(shipped + 1)…\(lastRemoved) had not reached the fleet collector"
                }
                let record = try insert(AuditEntry(event: .auditPrune, outcome: .success, vaultUser: vaultUser,
                                                   reason: reason), db)
                outcome = .pruned(removed, record)
                return .commit
            }
            return outcome!
        }
        switch outcome {
        case let .pruned(removed, record):
            journal.send(record)
            return removed
        case let .broken(at, reason):
            try append(.auditPrune, .error, vaultUser: vaultUser, reason: "refused: chain broken at #\(at)")
            throw AuditError.chainBroken(at: at, reason: reason)
        case let .unshipped(through, shipped):
            try append(.auditPrune, .denied, vaultUser: vaultUser,
                       reason: "refused cutoff \(cutoffText): records \(shipped + 1)…\(through) not shipped yet")
            throw AuditError.unshipped(through: through, shipped: shipped)
        }
    }

    /// How far the collector confirmed the current trail, when this store ships at all
    /// (nil: `audit ship` never ran here; 0: not a record of this trail yet).
    private func shippedCursor(_ db: Database) throws -> Int64? {
        guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM auditShipped)") == true else { return nil }
        guard case .some(.some(let seal)) = try AuditSeal.fetch(db) else { return 0 }
        return try Int64.fetchOne(db, sql: "SELECT seq FROM auditShipped WHERE trail = ? AND typeof(seq) = 'integer'",
                                  arguments: [Data(seal.trail)]) ?? 0
    }
}
