import TouchgatePolicy
import TouchgateVault
import TouchgateWire

/// Sends the policy core's decisions to the vault's hash-chained audit log.
///
/// Each event is one durable append; if it fails the evaluator denies the operation
/// (no access without a record). Item events name the item; for other events the
/// subject (a print identifier) goes into the reason. The OS user is added by the log.
struct VaultAuditSink: AuditSink {
    let log: AuditLog
    let vaultUser: String?

    func record(_ event: PolicyAuditEvent) throws {
        let namesItem = [.itemRead, .itemWrite, .itemDelete, .policyChanged].contains(event.kind)
        var reason = event.reason
        if let factor = event.factor { reason = "\(factor.rawValue): \(reason)" }
        if !namesItem, let subject = event.subject { reason += " [\(subject)]" }
        guard let outcome = AuditOutcome(rawValue: event.outcome.rawValue) else {
            throw ServiceError.dataError("unknown audit outcome \(event.outcome.rawValue)")
        }
        try log.append(AuditEntry(
            event: AuditEvent(rawValue: event.kind.rawValue), outcome: outcome, vaultUser: vaultUser,
            item: namesItem ? event.subject : nil, reason: reason))
    }
}
