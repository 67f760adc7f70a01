/// Names every door checks and offers before it sends a request, so a typo is refused
/// before anything is read or asked. The service decides with its own types; tests keep
/// these lists equal to them (VocabularyTests).
public enum Vocabulary {
    /// The finger names accepted by enroll, verify and delete: `left-thumb` … `right-little`
    /// (FingerprintKit's `Finger`, without `unknown`).
    public static let fingers = [
        "left-thumb", "left-index", "left-middle", "left-ring", "left-little",
        "right-thumb", "right-index", "right-middle", "right-ring", "right-little",
    ]

    /// The canonical name of `finger` (also accepts fprintd's `right-index-finger`), or nil.
    public static func finger(_ finger: String) -> String? {
        var key = finger.lowercased()
        if key.hasSuffix("-finger") { key.removeLast("-finger".count) }
        return fingers.contains(key) ? key : nil
    }

    /// The audit events a filter can name (the vault's `AuditEvent.known`, in its order).
    public static let auditEvents = [
        "auth.attempt", "item.read", "item.write", "item.delete", "finger.enroll", "finger.delete",
        "vault.lock", "session.end", "vault.unlock", "vault.init", "passphrase.change", "lockout.start", "lockout.end",
        "policy.change", "audit.prune", "integrity.failure", "audit.upgrade", "tpm.enroll", "tpm.recover",
        "tpm.counter", "vault.migrate", "access.denied", "audit.ship",
    ]

    /// fprintd's default store (`StateDirectory=fprint` of its unit), where `import fprintd` reads.
    public static let fprintdStore = "/var/lib/fprint"

    /// Where the root-owned fleet configuration is, unless named.
    public static let fleetConfiguration = "/etc/touchgate/fleet.conf"
}

extension ServiceError {
    /// A policy in string form that does not parse; `problem` says why.
    public static func invalidPolicy(_ problem: some Error) -> ServiceError {
        ServiceError(.usage, "invalid policy: \(problem)")
    }
}
