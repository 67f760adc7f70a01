import FoundationEssentials

/// How hard the passphrase is stretched (Argon2id).
public enum KeyStretching: String, Sendable, CaseIterable {
    /// libsodium's MODERATE limits (3 passes, 256 MiB): the default.
    case moderate
    /// The minimum limits: for tests only; gives no real protection.
    case minimum
}

/// What `init` made.
public struct InitReport: Codable, Sendable, Equatable {
    /// The data directory.
    public var directory: String
    /// The vault user.
    public var owner: String
    /// With `init --tpm`: the recovery key, shown once (``TPMEnrollReport/recoveryKey``).
    public var recoveryKey: String?

    /// A report.
    public init(directory: String, owner: String, recoveryKey: String? = nil) {
        self.directory = directory
        self.owner = owner
        self.recoveryKey = recoveryKey
    }
}

/// What `lock` did.
public struct LockReport: Codable, Sendable, Equatable {
    /// Whether the key was held before.
    public var wasUnlocked: Bool
    /// Damage found while recording the lock (the key is gone all the same).
    public var problem: String?

    /// A report.
    public init(wasUnlocked: Bool, problem: String? = nil) {
        self.wasUnlocked = wasUnlocked
        self.problem = problem
    }
}

/// What `secret add` stored.
public struct StoredReport: Codable, Sendable, Equatable {
    /// The item's name.
    public var name: String
    /// Its policy.
    public var policy: String
    /// Whether every release needs a fresh touch.
    public var fresh: Bool
    /// Whether an existing item was replaced.
    public var replaced: Bool

    /// A report.
    public init(name: String, policy: String, fresh: Bool, replaced: Bool) {
        self.name = name
        self.policy = policy
        self.fresh = fresh
        self.replaced = replaced
    }
}

/// The forms `touchgate audit export` writes: its own JSON lines (what `audit verify
/// --public-key` checks), and the schemas SIEMs read without a parser of their own.
/// Every field is documented in docs/AUDIT-FORMATS.md.
public enum AuditExportFormat: String, Sendable, CaseIterable {
    /// Touchgate's records with their chain fields, then the seal.
    case json
    /// OCSF 1.1 Authentication events (class 3002).
    case ocsf
    /// Elastic Common Schema 8.11 documents.
    case ecs
}

/// What `enroll` did.
public struct EnrollReport: Codable, Sendable, Equatable {
    /// Whose finger.
    public var user: String
    /// Which finger.
    public var finger: String
    /// The reader's driver.
    public var driver: String
    /// The reader's device id.
    public var deviceID: String
    /// Whether the reader keeps the print in its own storage.
    public var onDevice: Bool
    /// The `biometry-current-set` secrets whose keys the change destroyed.
    public var invalidated: [String]

    /// A report.
    public init(user: String, finger: String, driver: String, deviceID: String, onDevice: Bool, invalidated: [String]) {
        self.user = user
        self.finger = finger
        self.driver = driver
        self.deviceID = deviceID
        self.onDevice = onDevice
        self.invalidated = invalidated
    }
}

/// What `prints clear` did.
public struct ClearReport: Codable, Sendable, Equatable {
    /// The reader wiped.
    public var deviceID: String
    /// How many stored prints were forgotten.
    public var forgotten: Int
    /// The `biometry-current-set` secrets whose keys the change destroyed.
    public var invalidated: [String]

    /// A report.
    public init(deviceID: String, forgotten: Int, invalidated: [String]) {
        self.deviceID = deviceID
        self.forgotten = forgotten
        self.invalidated = invalidated
    }
}

/// What `prints delete` did.
public struct DeleteReport: Codable, Sendable, Equatable {
    /// Whose finger.
    public var user: String
    /// Which finger.
    public var finger: String
    /// How many prints (one per reader) were deleted.
    public var count: Int
    /// The `biometry-current-set` secrets whose keys the change destroyed.
    public var invalidated: [String]

    /// A report.
    public init(user: String, finger: String, count: Int, invalidated: [String]) {
        self.user = user
        self.finger = finger
        self.count = count
        self.invalidated = invalidated
    }
}

/// What `repair` found and did.
public struct RepairReport: Codable, Sendable, Equatable {
    /// Whether anything needed repair.
    public var repaired: Bool
    /// What was found, in words (empty when nothing was wrong).
    public var found: [String]
    /// Whether the audit trail was lost and a new one started.
    public var auditRestarted: Bool
    /// Whether the lockout and session limits were set back to the defaults.
    public var settingsReset: Bool

    /// A report.
    public init(repaired: Bool, found: [String], auditRestarted: Bool, settingsReset: Bool) {
        self.repaired = repaired
        self.found = found
        self.auditRestarted = auditRestarted
        self.settingsReset = settingsReset
    }
}

/// A change to the limits; nil leaves a value as it is.
public struct SettingsChange: Codable, Sendable, Equatable {
    /// Failed touches in a row that start a lockout (1…20).
    public var lockoutThreshold: Int?
    /// How long a lockout lasts, in seconds (1…86400).
    public var lockoutDurationSeconds: Int?
    /// How long a touch may be reused, in seconds (0…300).
    public var sessionTimeoutSeconds: Int?
    /// Idle time that ends the session, in seconds (at most the session timeout).
    public var idleTimeoutSeconds: Int?
    /// How long an approved `touchgate run` may run again without a touch, in seconds (0…900; 0: never).
    public var runLeaseSeconds: Int?
    /// The policy of the passkeys made from now on when the authenticator names none
    /// (touchgated's and the agent's devices): `biometry-any` or `biometry-current-set`.
    public var passkeyPolicy: String?

    /// A change.
    public init(lockoutThreshold: Int? = nil, lockoutDurationSeconds: Int? = nil, sessionTimeoutSeconds: Int? = nil,
                idleTimeoutSeconds: Int? = nil, runLeaseSeconds: Int? = nil, passkeyPolicy: String? = nil) {
        self.runLeaseSeconds = runLeaseSeconds
        self.passkeyPolicy = passkeyPolicy
        self.lockoutThreshold = lockoutThreshold
        self.lockoutDurationSeconds = lockoutDurationSeconds
        self.sessionTimeoutSeconds = sessionTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
    }
}

/// One print found in fprintd's store.
public struct ImportedPrint: Codable, Sendable, Equatable {
    /// Which finger (`right-index`, …).
    public var finger: String
    /// The reader's driver.
    public var driver: String
    /// The reader's device id.
    public var deviceID: String
    /// Why it was skipped, when it was.
    public var reason: String?

    /// A report.
    public init(finger: String, driver: String, deviceID: String, reason: String? = nil) {
        self.finger = finger
        self.driver = driver
        self.deviceID = deviceID
        self.reason = reason
    }
}

/// What `import fprintd` did (or, with a dry run, would do).
public struct ImportReport: Codable, Sendable, Equatable {
    /// Whose prints.
    public var user: String
    /// fprintd's store that was read.
    public var from: String
    /// Whether nothing was written.
    public var dryRun: Bool
    /// The prints copied into Touchgate's store (or that would be).
    public var imported: [ImportedPrint]
    /// The prints left out, each with its reason.
    public var skipped: [ImportedPrint]
    /// The `biometry-current-set` secrets whose keys the change destroyed.
    public var invalidated: [String]

    /// A report.
    public init(user: String, from: String, dryRun: Bool, imported: [ImportedPrint], skipped: [ImportedPrint], invalidated: [String]) {
        self.user = user
        self.from = from
        self.dryRun = dryRun
        self.imported = imported
        self.skipped = skipped
        self.invalidated = invalidated
    }
}

/// The file format of a captured image.
public enum ImageFormat: String, Sendable, CaseIterable {
    /// Binary 8-bit PGM.
    case pgm
    /// 8-bit grey PNG.
    case png
}

/// What `capture` wrote.
public struct CaptureReport: Codable, Sendable, Equatable {
    /// The file written.
    public var output: String
    /// Image width in pixels.
    public var width: Int
    /// Image height in pixels.
    public var height: Int

    /// A report.
    public init(output: String, width: Int, height: Int) {
        self.output = output
        self.width = width
        self.height = height
    }
}
