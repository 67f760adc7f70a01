import Foundation
import TouchgateVault
import TouchgateWire

extension TouchgateService {
    /// Audit records as stored, oldest first (verify the chain to trust them); only the
    /// last `limit` when given.
    public func auditRecords(limit: Int? = nil) async throws(ServiceError) -> [AuditRecordReport] {
        try await withStore { store in
            try store.vault().audit.records(limit: limit).map { record in
                AuditRecordReport(seq: record.sequence, time: record.time, bootTime: record.bootTime, uid: record.uid,
                                  login: record.loginName, vaultUser: record.vaultUser, event: record.event.rawValue,
                                  item: record.item, outcome: record.outcome.rawValue, reason: record.reason)
            }
        }
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

    /// Writes every record as one JSON object per line, with its chain MACs.
    public func exportAudit(to write: @escaping (String) -> Void) async throws(ServiceError) -> Int {
        try await withStore { store in try store.vault().audit.exportJSONLines { write($0) } }
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
}
