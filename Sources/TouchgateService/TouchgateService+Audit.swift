import Foundation
import TouchgatePolicy
import TouchgateVault
import TouchgateWire

extension TouchgateService {
    /// Records in the principal's own trail that touchgated refused a request of theirs
    /// before any use case ran (`access.denied`): acting for another user, or an operation
    /// that needs root. `operation` names what was asked; `refusal` says why.
    public func recordRefusal(of operation: String, _ refusal: ServiceError) async throws(ServiceError) {
        try await withStore { access in
            _ = try access.audit().append(.accessDenied, .denied, vaultUser: principal.loginName,
                                          reason: "\(operation): \(refusal.message)")
        }
    }

    /// Every audit event name this release writes, in a stable order (for help texts and
    /// ``AuditFilter/events``).
    public static var auditEventNames: [String] { AuditEvent.known.map(\.rawValue) }

    /// The audit records `filter` selects, in its order (as stored: verify the chain to
    /// trust them). Without a filter, every record, oldest first. The chain fields are
    /// left out; ``exportAudit(_:to:)`` includes them.
    /// - Throws: ``ServiceError`` `usage` for a filter that cannot match as meant (an
    ///   unknown event or outcome, a negative limit, `since` not before `until`).
    public func auditRecords(_ filter: AuditFilter = AuditFilter()) async throws(ServiceError) -> [AuditRecordReport] {
        let query = try Self.auditQuery(filter)
        return try await withStore { store in
            try store.vault().audit.records(query).map { Self.report($0, chain: false) }
        }
    }

    /// How many records `filter` selects, ignoring its limit: beside ``auditRecords(_:)``
    /// it tells how many a limit left out.
    /// - Throws: ``ServiceError`` `usage` as ``auditRecords(_:)`` does.
    public func auditRecordCount(_ filter: AuditFilter = AuditFilter()) async throws(ServiceError) -> Int {
        let query = try Self.auditQuery(filter)
        return try await withStore { store in try store.vault().audit.count(query) }
    }

    /// Checks the audit chain; returns how many records it holds.
    /// - Throws: ``ServiceError`` `audit-broken` naming the first record that cannot be trusted.
    public func verifyAudit() async throws(ServiceError) -> Int {
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
    /// ``verifyAudit()`` alongside.
    /// - Throws: ``ServiceError`` `usage` as ``auditRecords(_:)`` does.
    public func exportAudit(_ filter: AuditFilter = AuditFilter(),
                            to write: @escaping @Sendable (String) -> Void) async throws(ServiceError) -> Int {
        let query = try Self.auditQuery(filter)
        return try await withStore { store in
            try store.vault().audit.forEachRecord(query) { write(WireCoding.line(Self.report($0, chain: true)) + "\n") }
        }
    }

    /// Deletes records older than `cutoff`; records younger than six years only with
    /// `force`. Needs the passphrase; the chain stays verifiable and the prune is recorded.
    public func pruneAudit(before cutoff: Date, force: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> Int {
        try await withStore { store in
            let context = try store.vault()
            try context.requireIntactState()
            if !force && cutoff > AuditLog.retentionCutoff(now: Date()) {
                // Refused (and audited) before the passphrase is asked for.
                return try context.audit.prune(before: cutoff, force: false, vaultUser: context.vault.owner)
            }
            try await context.checkPassphrase(interaction, purpose: "prune the audit trail")
            return try context.audit.prune(before: cutoff, force: force, vaultUser: context.vault.owner)
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
        }
        return report
    }
}
