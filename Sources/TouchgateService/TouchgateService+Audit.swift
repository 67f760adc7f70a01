public import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
import TouchgateShipping
public import TouchgateAPI

extension TouchgateService {
    /// Records in the principal's own trail that touchgated refused a request of theirs
    /// before any use case ran (`access.denied`): acting for another user, an operation
    /// that needs root, a finger asked from a remote session. `operation` names what was
    /// asked; `refusal` says why. With `onlyIfStoreExists`, a principal without a store gets
    /// none made for the record (a PAM stack asks about everyone who logs in).
    public func recordRefusal(of operation: String, _ refusal: ServiceError,
                              onlyIfStoreExists: Bool = false) async throws(ServiceError) {
        if onlyIfStoreExists, !hasStore { return }
        try await withStore { access in
            _ = try access.audit().append(.accessDenied, .denied, vaultUser: principal.loginName,
                                          reason: "\(operation): \(refusal.message)")
        }
    }

    /// The audit records `filter` selects, in its order (as stored: verify the chain to
    /// trust them). Without a filter, every record, oldest first. The chain fields are
    /// left out; ``auditExport(_:format:to:)`` includes them.
    /// - Throws: ``ServiceError`` `usage` for a filter that cannot match as meant (an
    ///   unknown event or outcome, a negative limit, `since` not before `until`).
    public func auditShow(_ filter: AuditFilter = AuditFilter()) async throws(ServiceError) -> [AuditRecordReport] {
        let query = try Self.auditQuery(filter)
        return try await withStore { store in
            try store.vault().audit.records(query).map { Self.report($0, chain: false) }
        }
    }

    /// How many records `filter` selects, ignoring its limit: beside ``auditShow(_:)``
    /// it tells how many a limit left out.
    /// - Throws: ``ServiceError`` `usage` as ``auditShow(_:)`` does.
    public func auditCount(_ filter: AuditFilter = AuditFilter()) async throws(ServiceError) -> Int {
        let query = try Self.auditQuery(filter)
        return try await withStore { store in try store.vault().audit.count(query) }
    }

    /// Checks the audit chain; returns how many records it holds.
    /// - Throws: ``ServiceError`` `audit-broken` naming the first record that cannot be trusted.
    public func auditVerify() async throws(ServiceError) -> Int {
        try await withStore { store in
            switch try store.vault().audit.verify() {
            case .intact(let count):
                return count
            case .broken(let sequence, let reason):
                throw ServiceError(.auditBroken, "audit log broken at record \(sequence): \(reason). Keep a copy "
                                   + "for investigation (touchgate audit export > FILE); new records still chain "
                                   + "from the last genuine one")
            }
        }
    }

    /// Writes the records `filter` selects (every record, oldest first, by default) as
    /// JSON lines: each an ``AuditRecordReport`` in the wire's one JSON form (the keys of
    /// `audit show --json`) with its chain fields, ending in a newline. Returns how many.
    ///
    /// Streams from one database snapshot; records are exported as stored, so run
    /// ``auditVerify()`` alongside.
    /// - Throws: ``ServiceError`` `usage` as ``auditShow(_:)`` does.
    ///
    /// Each record also carries its public links and trail, and the last line is the seal
    /// (``AuditSealLine``): with the trail's public key (``auditPublicKey()``), anyone can
    /// check an unfiltered export with ``PublicAuditCheck`` (`touchgate audit verify
    /// --public-key`), holding no secret.
    ///
    /// `format` `ocsf` and `ecs` write the same records as OCSF Authentication events and
    /// ECS documents instead (``AuditExportFormat``), without the seal line.
    ///
    /// `write` may block (a slow reader at the other end) and may throw to end the export
    /// early: the export runs on a thread of its own, never on the shared pool, so a reader
    /// that stops reading holds only that thread.
    public func auditExport(_ filter: AuditFilter = AuditFilter(), format: AuditExportFormat = .json,
                            to write: @escaping @Sendable (String) throws -> Void) async throws(ServiceError) -> Int {
        let query = try Self.auditQuery(filter)
        let host = ProcessInfo.processInfo.hostName
        return try await withStore { store in
            let audit = try store.vault().audit
            return try await OwnThread.run { () throws -> Int in
                // One snapshot: the seal is read in the same transaction as the records.
                nonisolated(unsafe) var trail: String?
                let (count, seal) = try audit.export(query, sealed: { trail = $0.map { Hex.encode($0.trail) } }) { record in
                    var report = Self.report(record, chain: true)
                    report.trail = trail
                    switch format {
                    case .json: try write(WireCoding.line(report) + "\n")
                    case .ocsf: try write(AuditInterchange.ocsf(report, host: host) + "\n")
                    case .ecs: try write(AuditInterchange.ecs(report, host: host) + "\n")
                    }
                }
                if let seal, format == .json { try write(WireCoding.line(AuditSealLine(seal: Self.report(seal))) + "\n") }
                return count
            }
        }
    }

    /// The public key that signs this trail's seal, lowercase hex: what a central verifier
    /// registers (`touchgate audit public-key`).
    public func auditPublicKey() async throws(ServiceError) -> String {
        try await withStore { store in Hex.encode(try store.vault().audit.publicKey) }
    }

    /// Deletes records older than `cutoff`. Needs the passphrase; the chain stays
    /// verifiable and the prune is recorded with what it removed.
    ///
    /// Records inside the retention (``auditRetentionYears``, never fewer than six years)
    /// are kept whatever `cutoff` says: such a cutoff is refused, and audited, before the
    /// passphrase is asked for. `force` only lets the prune remove records the fleet
    /// collector has not confirmed yet.
    /// - Throws: ``ServiceError`` `retention` for a cutoff inside the retention (the message
    ///   names the latest day allowed) or for unshipped records without `force`.
    public func auditPrune(before cutoff: Date, force: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> Int {
        let years = auditRetentionYears
        return try await withStore { store in
            let context = try store.vault()
            try context.requireIntactState()
            if cutoff > AuditLog.retentionCutoff(now: Date(), years: years) {
                // Refused (and audited) before the passphrase is asked for.
                return try context.audit.prune(before: cutoff, keepingYears: years, vaultUser: context.vault.owner)
            }
            try await context.checkPassphrase(interaction, purpose: "prune the audit trail")
            return try context.audit.prune(before: cutoff, keepingYears: years, evenUnshipped: force,
                                           vaultUser: context.vault.owner)
        }
    }

    /// The vault query for a filter, checked.
    static func auditQuery(_ filter: AuditFilter) throws(ServiceError) -> AuditQuery {
        var events: [AuditEvent] = []
        for name in filter.events {
            guard let event = AuditEvent.known.first(where: { $0.rawValue == name }) else {
                throw ServiceError.usage("unknown audit event \(name.debugDescription); events are "
                                         + AuditEvent.known.map(\.rawValue).joined(separator: ", "))
            }
            events.append(event)
        }
        var outcomes: [AuditOutcome] = []
        for name in filter.outcomes {
            guard let outcome = AuditOutcome(rawValue: name) else {
                throw ServiceError.usage("unknown audit outcome \(name.debugDescription); outcomes are "
                                         + "success, failure, denied, error")
            }
            outcomes.append(outcome)
        }
        if let limit = filter.limit, limit < 0 {
            throw ServiceError.usage("a limit of audit records cannot be negative (\(limit))")
        }
        if let since = filter.since, let until = filter.until, since >= until {
            throw ServiceError.usage("the start of the period (\(since.formatted(.iso8601))) is not before its end "
                                     + "(\(until.formatted(.iso8601)))")
        }
        return AuditQuery(since: filter.since, until: filter.until, item: filter.item, events: events,
                          outcomes: outcomes, limit: filter.limit,
                          order: filter.order == .oldestFirst ? .oldestFirst : .newestFirst)
    }

    /// A stored record on the wire; with `chain`, also the fields its MAC covers exactly.
    static func report(_ record: AuditRecord, chain: Bool) -> AuditRecordReport {
        var report = AuditRecordReport(
            seq: record.sequence, time: record.time, bootTime: record.bootTime, uid: record.uid,
            login: record.loginName, vaultUser: record.vaultUser, event: record.event.rawValue,
            item: record.item, outcome: record.outcome.rawValue, reason: record.reason)
        if chain {
            report.unixTime = record.unixTime
            report.bootID = record.bootID
            report.prevMAC = Hex.encode(record.previousMAC)
            report.mac = Hex.encode(record.mac)
            report.prevChain = record.previousChain.map { Hex.encode($0) }
            report.chain = record.chain.map { Hex.encode($0) }
        }
        return report
    }

    /// A seal on the wire.
    static func report(_ seal: AuditSeal) -> AuditSealReport {
        AuditSealReport(trail: Hex.encode(seal.trail), seq: seal.sequence, chain: Hex.encode(seal.chain),
                        publicKey: Hex.encode(seal.publicKey), signature: Hex.encode(seal.signature))
    }
}
