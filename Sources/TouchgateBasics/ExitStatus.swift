/// The documented exit statuses of `touchgate` (docs/COMMANDS.md, "Exit codes"). Keep the two in step.
public enum ExitStatus {
    /// Success; for verify and identify, a match.
    public static let success: Int32 = 0
    /// Verify, identify or a release: the finger did not match.
    public static let noMatch: Int32 = 1
    /// No reader found, or it cannot be opened.
    public static let noReader: Int32 = 2
    /// Nothing enrolled for this user, finger and reader.
    public static let nothingEnrolled: Int32 = 3
    /// The reader was unplugged during the operation.
    public static let disconnected: Int32 = 4
    /// The reader failed (busy, protocol error, unsupported, too many poor scans).
    public static let readerError: Int32 = 5
    /// Stored data cannot be used: damaged, edited outside touchgate, a broken or wiped
    /// audit trail, unsafe permissions.
    public static let dataError: Int32 = 6
    /// Locked out after too many failed attempts.
    public static let lockedOut: Int32 = 7
    /// Authentication needed or refused.
    public static let authentication: Int32 = 8
    /// It already exists: the finger is enrolled, the vault exists, a secret of that name
    /// exists (use --replace).
    public static let alreadyExists: Int32 = 9
    /// Not found: no vault yet, no secret of that name.
    public static let notFound: Int32 = 10
    /// Refused by a rule or by the person: a confirmation declined (or not possible
    /// without a terminal and no --yes), a prune inside the retention period, a passphrase
    /// too weak to protect the vault, a request the caller may not make, a fingerprint asked
    /// from a remote session.
    public static let refused: Int32 = 11
    /// `audit ship`: the collector's database could not be reached, and more records wait
    /// to be shipped than the configured backlog limit.
    public static let backlogFull: Int32 = 12
    /// No room: the disk holding the store is full, or a store through touchgated would pass
    /// the user's quota; nothing was changed.
    public static let noRoom: Int32 = 13
    /// Usage error.
    public static let usage: Int32 = 64
    /// A service is unavailable: `audit ship`'s collector database (the records stay
    /// queued), or the TPM a vault is bound to.
    public static let collectorUnavailable: Int32 = 69
    /// Someone else changed it meanwhile; nothing was written: try again.
    public static let tryAgain: Int32 = 75
    /// `secret exec`: the command could not be started.
    public static let commandNotRunnable: Int32 = 127
    /// Interrupted (Ctrl-C) or cancelled.
    public static let cancelled: Int32 = 130
}
