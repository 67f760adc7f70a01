import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

/// Sends the policy core's decisions to the vault's hash-chained audit log.
///
/// Each event is one durable append, or part of the caller's transaction; if it fails
/// the evaluator denies the operation (no access without a record). Item events name
/// the item; for other events the subject (a print identifier) goes into the reason. The
/// OS user is added by the log.
struct VaultAuditSink: AuditSink {
    let vaultUser: String?
    private let append: @Sendable (AuditEntry) throws -> Void

    /// Appends to `log`, one transaction per event.
    init(log: AuditLog, vaultUser: String?) {
        self.vaultUser = vaultUser
        append = { try log.append($0) }
    }

    /// Appends inside a running transaction.
    init(transaction: TransactionHandle, vaultUser: String?) {
        self.vaultUser = vaultUser
        append = { _ = try transaction.handle.append($0) }
    }

    func record(_ event: PolicyAuditEvent) throws {
        let namesItem = [.itemRead, .itemWrite, .itemDelete, .policyChanged].contains(event.kind)
        var reason = event.reason
        if let factor = event.factor { reason = "\(factor.rawValue): \(reason)" }
        if !namesItem, let subject = event.subject { reason += " [\(subject)]" }
        guard let outcome = AuditOutcome(rawValue: event.outcome.rawValue) else {
            throw ServiceError.dataError("unknown audit outcome \(event.outcome.rawValue)")
        }
        try append(AuditEntry(
            event: AuditEvent(rawValue: event.kind.rawValue), outcome: outcome, vaultUser: vaultUser,
            item: namesItem ? event.subject : nil, reason: reason))
    }
}
