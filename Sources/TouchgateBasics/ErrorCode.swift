/// A stable, machine-readable reason a request failed. The raw value is what `--json`
/// and the daemon protocol carry; each code has one documented exit status.
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    /// The finger did not match.
    case noMatch = "no-match"
    /// No usable reader.
    case noReader = "no-reader"
    /// Nothing enrolled that could match.
    case nothingEnrolled = "nothing-enrolled"
    /// The reader was unplugged.
    case disconnected
    /// The reader failed or scanned too poorly too often.
    case readerError = "reader-error"
    /// Stored data is damaged or unusable.
    case dataError = "data-error"
    /// An item or template failed its integrity check.
    case integrity
    /// Lockout counters, settings or enrollment state were edited outside touchgate.
    case stateTampered = "state-tampered"
    /// The audit trail cannot be used (missing key, malformed record).
    case auditError = "audit-error"
    /// The audit chain does not verify.
    case auditBroken = "audit-broken"
    /// There is no vault yet.
    case noVault = "no-vault"
    /// A vault already exists.
    case alreadyInitialized = "already-initialized"
    /// No such item.
    case notFound = "not-found"
    /// The item changed while this request waited for authorization.
    case conflict
    /// Too many failed touches.
    case lockedOut = "locked-out"
    /// The passphrase was wrong.
    case wrongPassphrase = "wrong-passphrase"
    /// The vault key is not held.
    case vaultLocked = "vault-locked"
    /// The passphrase is needed but could not be asked.
    case passphraseRequired = "passphrase-required"
    /// The passphrase could not be read.
    case passphraseInput = "passphrase-input"
    /// The item was invalidated by an enrollment change.
    case itemInvalidated = "item-invalidated"
    /// The finger is already enrolled.
    case alreadyEnrolled = "already-enrolled"
    /// A secret of that name exists and replacing it was not confirmed.
    case alreadyExists = "already-exists"
    /// The person declined a confirmation, or it could not be asked (no terminal, no --yes).
    case declined
    /// A prune of records that must be kept: inside the retention period, or not yet
    /// shipped to the fleet collector.
    case retention
    /// The disk holding the store is full (or the user's disk quota is used up); nothing
    /// was changed.
    case diskFull = "disk-full"
    /// A store through touchgated would pass the user's quota of items or bytes; nothing
    /// was stored.
    case quota
    /// The new passphrase is too weak to protect the vault.
    case weakPassphrase = "weak-passphrase"
    /// touchgated cannot be reached, or broke off the conversation.
    case daemonUnavailable = "daemon-unavailable"
    /// The caller may not do this (another user's data, a system-wide change without root).
    case forbidden
    /// A request that asked for a local session only (`local-only`, the PAM module's)
    /// came from a session systemd-logind counts as remote: no finger is asked from afar.
    case remoteSession = "remote-session"
    /// A wait passed its deadline: no finger on the reader, or no answer to a question.
    /// Nothing was changed; run the command again.
    case timedOut = "timed-out"
    /// A bound that keeps one user from taking the daemon from others: too many
    /// connections, too many requests in a short time, or the user's storage quota.
    case limit
    /// The request itself is invalid.
    case usage
    /// The user cancelled.
    case cancelled
    /// `secret exec` could not start the command.
    case execFailed = "exec-failed"
    /// The fleet collector's database cannot be reached; the records stay queued locally.
    case collectorUnavailable = "collector-unavailable"
    /// As ``collectorUnavailable``, and more records wait than the configured backlog limit.
    case backlogFull = "backlog-full"
    /// The TPM the vault is bound to cannot be reached, or does not hold the vault's secret
    /// (cleared, replaced, another machine: `touchgate tpm recover`).
    case tpmUnavailable = "tpm-unavailable"
    /// Anything else.
    case error

    /// The process exit status documented for this code.
    public var exitStatus: Int32 {
        switch self {
        case .noMatch: ExitStatus.noMatch
        case .noReader: ExitStatus.noReader
        case .nothingEnrolled: ExitStatus.nothingEnrolled
        case .disconnected: ExitStatus.disconnected
        case .readerError, .error: ExitStatus.readerError
        case .dataError, .integrity, .stateTampered, .auditError, .auditBroken:
            ExitStatus.dataError
        case .noVault, .notFound: ExitStatus.notFound
        case .alreadyInitialized, .alreadyEnrolled, .alreadyExists: ExitStatus.alreadyExists
        case .declined, .retention, .weakPassphrase, .forbidden, .remoteSession: ExitStatus.refused
        case .conflict, .daemonUnavailable, .timedOut, .limit: ExitStatus.tryAgain
        case .lockedOut: ExitStatus.lockedOut
        case .wrongPassphrase, .vaultLocked, .passphraseRequired, .passphraseInput, .itemInvalidated:
            ExitStatus.authentication
        case .usage: ExitStatus.usage
        case .cancelled: ExitStatus.cancelled
        case .execFailed: ExitStatus.commandNotRunnable
        case .collectorUnavailable, .tpmUnavailable: ExitStatus.collectorUnavailable
        case .backlogFull: ExitStatus.backlogFull
        case .diskFull, .quota: ExitStatus.noRoom
        }
    }
}

/// Why a request failed: a stable code, a message that says what happened and what to
/// do next (never a secret or a template), and for refusals the figures a script needs.
public struct ServiceError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    /// The stable reason.
    public var code: ErrorCode
    /// For people.
    public var message: String
    /// After a no-match: failed touches left before a lockout starts.
    public var attemptsLeft: Int?
    /// During a timed lockout: seconds until it ends.
    public var retryAfterSeconds: Int?

    /// An error with `code` and `message`.
    public init(_ code: ErrorCode, _ message: String, attemptsLeft: Int? = nil, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.message = message
        self.attemptsLeft = attemptsLeft
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The exit status for ``code``.
    public var exitStatus: Int32 { code.exitStatus }

    /// The message.
    public var description: String { message }

    /// The user cancelled.
    public static let cancelled = ServiceError(.cancelled, "cancelled")
}
