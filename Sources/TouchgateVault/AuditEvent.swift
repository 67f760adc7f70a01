/// What an audit record is about: a stable, dotted name such as `auth.attempt`.
///
/// The raw strings are part of the on-disk format and of the journald fields
/// (`TOUCHGATE_EVENT=`): they never change meaning once shipped. A struct rather than
/// an enum so that a record written by a newer release still reads in an older one.
/// Custom events must be lowercase ASCII letters, digits, `.`, `_` or `-` (at most 64).
public struct AuditEvent: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The stable name stored in the log.
    public let rawValue: String

    /// An event with this stable name. Traps on a name that is not lowercase dotted ASCII
    /// (a programmer error: event names are constants, never user input).
    public init(rawValue: String) {
        precondition(Self.isValidName(rawValue), "invalid audit event name \(rawValue.debugDescription)")
        self.rawValue = rawValue
    }

    /// An event name read back from the database, taken as it is.
    public init(stored: String) {
        self.rawValue = stored
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
            return false
        }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// A one-line, human-readable form (never holds a secret).
    public var description: String { rawValue }

    /// A fingerprint or passphrase authentication attempt (`auth.attempt`).
    public static let authAttempt = AuditEvent(rawValue: "auth.attempt")
    /// An item's value was released (`item.read`).
    public static let itemRead = AuditEvent(rawValue: "item.read")
    /// An item was created or replaced (`item.write`).
    public static let itemWrite = AuditEvent(rawValue: "item.write")
    /// An item was deleted (`item.delete`).
    public static let itemDelete = AuditEvent(rawValue: "item.delete")
    /// A finger was enrolled (`finger.enroll`).
    public static let fingerEnroll = AuditEvent(rawValue: "finger.enroll")
    /// An enrolled finger was deleted (`finger.delete`).
    public static let fingerDelete = AuditEvent(rawValue: "finger.delete")
    /// The vault was locked on request, such as by `touchgate lock` (`vault.lock`).
    public static let vaultLock = AuditEvent(rawValue: "vault.lock")
    /// A reuse session ended by itself: idle, expired, or the machine restarted
    /// (`session.end`). Records before this event existed said `vault.lock` instead.
    public static let sessionEnd = AuditEvent(rawValue: "session.end")
    /// The vault was unlocked with the passphrase (`vault.unlock`).
    public static let vaultUnlock = AuditEvent(rawValue: "vault.unlock")
    /// A vault was created (`vault.init`).
    public static let vaultInit = AuditEvent(rawValue: "vault.init")
    /// The passphrase was changed (`passphrase.change`).
    public static let passphraseChange = AuditEvent(rawValue: "passphrase.change")
    /// Too many failures: a lockout began (`lockout.start`).
    public static let lockoutStart = AuditEvent(rawValue: "lockout.start")
    /// A lockout ended or was cleared (`lockout.end`).
    public static let lockoutEnd = AuditEvent(rawValue: "lockout.end")
    /// An access-control policy or setting changed (`policy.change`).
    public static let policyChange = AuditEvent(rawValue: "policy.change")
    /// Old audit records were removed (`audit.prune`).
    public static let auditPrune = AuditEvent(rawValue: "audit.prune")
    /// Stored data failed an integrity check (`integrity.failure`).
    public static let integrityFailure = AuditEvent(rawValue: "integrity.failure")
    /// The audit head was upgraded to a new format, such as one that authenticates the
    /// lockout, settings and enrollment state (`audit.upgrade`).
    public static let auditUpgrade = AuditEvent(rawValue: "audit.upgrade")
    /// The vault key was bound to a TPM (`tpm.enroll`).
    public static let tpmEnroll = AuditEvent(rawValue: "tpm.enroll")
    /// The vault was bound to a TPM again with the recovery key (`tpm.recover`).
    public static let tpmRecover = AuditEvent(rawValue: "tpm.recover")
    /// The TPM's counter was found ahead after a power loss and adopted, or a rolled-back
    /// store was adopted by `touchgate repair` (`tpm.counter`).
    public static let tpmCounter = AuditEvent(rawValue: "tpm.counter")
    /// The store, its audit trail included, was moved from a personal (in-process) data
    /// directory into touchgated's store (`vault.migrate`); the chain continues across it.
    public static let vaultMigrate = AuditEvent(rawValue: "vault.migrate")
    /// touchgated refused a request because the caller may not make it: acting for another
    /// user, or a change that needs root (`access.denied`). Written to the caller's own trail.
    public static let accessDenied = AuditEvent(rawValue: "access.denied")
    /// A shipment to the fleet collector failed its proofs: the collector's log was cut,
    /// rewritten or replaced, or another writer took this trail's sequence numbers
    /// (`audit.ship`, outcome `failure`; nothing was marked shipped).
    public static let auditShip = AuditEvent(rawValue: "audit.ship")
    /// An SSH key withdrawn from the agents or offered to them again, for a while or for good
    /// (`ssh.offer`: `ssh-add -d`, `-D`, `-t`, `ssh-add FILE`, `touchgate ssh offer`).
    public static let sshOffer = AuditEvent(rawValue: "ssh.offer")

    /// Every event this release defines, in a stable order.
    public static let known: [AuditEvent] = [
        .authAttempt, .itemRead, .itemWrite, .itemDelete, .fingerEnroll, .fingerDelete,
        .vaultLock, .sessionEnd, .vaultUnlock, .vaultInit, .passphraseChange, .lockoutStart, .lockoutEnd,
        .policyChange, .auditPrune, .integrityFailure, .auditUpgrade, .tpmEnroll, .tpmRecover, .tpmCounter, .vaultMigrate, .accessDenied, .auditShip,
    ]
}

/// How the audited action ended: `success`, `failure`, `denied` or `error`.
///
/// `failure` is a genuine negative answer (a finger that does not match, a wrong
/// passphrase); `denied` is a refusal by policy (lockout, retention); `error` is
/// something that went wrong in the world (reader unplugged, I/O).
public struct AuditOutcome: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The stable name stored in the log.
    public let rawValue: String

    /// One of the four outcomes; `nil` for any other string.
    public init?(rawValue: String) {
        guard ["success", "failure", "denied", "error"].contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// An outcome read back from the database, taken as it is.
    public init(stored: String) {
        self.rawValue = stored
    }

    /// A one-line, human-readable form (never holds a secret).
    public var description: String { rawValue }

    /// The action was carried out (`success`).
    public static let success = AuditOutcome(stored: "success")
    /// A genuine negative answer, such as a non-matching finger (`failure`).
    public static let failure = AuditOutcome(stored: "failure")
    /// Refused by policy, such as during a lockout (`denied`).
    public static let denied = AuditOutcome(stored: "denied")
    /// Something went wrong in the world, such as an unplugged reader (`error`).
    public static let error = AuditOutcome(stored: "error")
}
