public import FoundationEssentials

/// Errors from the audit log. Messages name the file or record and what to do.
///
/// Unsafe permissions on the key file are reported as
/// ``StoreError/unsafePermissions(path:detail:)``, like every other private file.
public enum AuditError: Error, Equatable, CustomStringConvertible {
    /// The key file is gone although the log already has records.
    case keyMissing(path: String)
    /// The key file exists but is not a 32-byte key.
    case keyInvalid(path: String, detail: String)
    /// `prune` was asked to remove records still inside the retention period of `years`
    /// years; `oldestAllowed` is the latest cutoff allowed.
    case withinRetention(requested: Date, oldestAllowed: Date, years: Int)
    /// `prune` found the chain broken and removed nothing (the evidence is kept).
    case chainBroken(at: Int64, reason: String)
    /// `prune` would remove records up to `through` while the fleet collector holds them
    /// only up to `shipped`; nothing was removed.
    case unshipped(through: Int64, shipped: Int64)
    /// A stored record has a field of the wrong type (the table was edited by hand).
    case malformedRecord(sequence: Int64)
    /// A vault exists but its audit trail is gone: the key file, the head row or every
    /// record. `detail` says which. The log is not started afresh silently; the repair
    /// command (`touchgate repair`) may start a new trail with
    /// ``AuditLog/restart(database:journal:now:vaultUser:reason:)``, which records the loss.
    case wiped(detail: String)

    /// A one-line, human-readable form (never holds a secret).
    public var description: String {
        switch self {
        case let .keyMissing(path):
            return "the audit key \(path) is missing but the audit log has records; restore audit.key from the backup taken with this database (without it the log can be neither verified nor extended)"
        case let .keyInvalid(path, detail):
            return "the audit key \(path) is unusable: \(detail); restore audit.key from the backup taken with this database"
        case let .withinRetention(requested, oldestAllowed, years):
            // The day form is what `audit prune --before` takes; that day's start is inside the limit.
            let day = oldestAllowed.formatted(.iso8601.year().month().day())
            let kept = years == AuditLog.retentionYears
                ? "six years (HIPAA 45 CFR 164.316(b)(2))"
                : "\(years) years on this machine (at least six: HIPAA 45 CFR 164.316(b)(2))"
            return "refusing to prune records newer than \(requested.formatted(.iso8601)): audit records are kept for \(kept), so the latest cutoff allowed today is \(day) (touchgate audit prune --before \(day)); --force does not shorten the retention; nothing was removed"
        case let .chainBroken(at, reason):
            return "refusing to prune: the audit chain is broken at record \(at) (\(reason)); nothing was removed"
        case let .unshipped(through, shipped):
            return "refusing to prune: records \(shipped + 1)…\(through) would be removed but the fleet collector holds this trail only up to record \(shipped); run `touchgate audit ship` first (or pass --force to lose them for the collector); nothing was removed"
        case let .wiped(detail):
            return "the audit trail of this vault is gone: \(detail). It is not started afresh silently: restore the data directory (the database together with audit.key) from a backup, or run `touchgate repair` to start a new trail that records the loss"
        case let .malformedRecord(sequence):
            return "audit record \(sequence) has a field of the wrong type; the audit table was edited by hand (run `touchgate audit verify`)"
        }
    }
}
