public import FoundationEssentials

/// What `unlock` did: with `only-if-due`, nothing when the passphrase was not due.
public struct UnlockReport: Codable, Sendable, Equatable {
    /// The passphrase was asked and the vault is unlocked; false only for an `only-if-due`
    /// unlock that found the vault needing no passphrase (or no vault), and asked nothing.
    public var unlocked: Bool
    /// True when the passphrase lifted a lockout: fingers work again (absent otherwise).
    public var lockoutLifted: Bool?

    /// A report.
    public init(unlocked: Bool, lockoutLifted: Bool = false) {
        self.unlocked = unlocked
        self.lockoutLifted = lockoutLifted ? true : nil
    }
}

/// A fingerprint reader.
public struct ReaderReport: Codable, Sendable, Equatable {
    /// libfprint's device id.
    public var deviceID: String
    /// The driver's name.
    public var driver: String
    /// The product name.
    public var name: String
    /// `press` or `swipe`.
    public var scanType: String
    /// Scans an enrollment takes.
    public var enrollStages: Int
    /// What the reader can do (`identify`, `verify`, `capture`, `storage`, …).
    public var features: [String]
    /// How Touchgate reaches it: `libfprint` (opens the reader itself) or `fprintd`
    /// (verifies through fprintd, which owns the reader).
    public var backend: String
    /// `cold`, `warm` or `hot`: libfprint's estimate of how warm the reader is, for readers
    /// reached directly (fprintd does not report it). libfprint keeps the estimate while a
    /// process uses the reader and starts each process from `cold`; a `hot` reader refuses
    /// to scan until it has cooled down.
    public var temperature: String?
    /// Whether touchgated holds the reader open between requests (it keeps a reader open
    /// once a request has used it); absent in the personal mode and for fprintd's readers.
    public var open: Bool?

    /// A report.
    public init(deviceID: String, driver: String, name: String, scanType: String, enrollStages: Int, features: [String],
                backend: String = "libfprint", temperature: String? = nil) {
        self.deviceID = deviceID
        self.driver = driver
        self.name = name
        self.scanType = scanType
        self.enrollStages = enrollStages
        self.features = features
        self.backend = backend
        self.temperature = temperature
    }
}

/// An enrolled print, never its template.
public struct PrintReport: Codable, Sendable, Equatable {
    /// Whose finger.
    public var user: String
    /// Which finger (`right-index`, …).
    public var finger: String
    /// The reader's driver.
    public var driver: String
    /// The reader's device id.
    public var deviceID: String
    /// When it was enrolled.
    public var enrolled: Date
    /// Whether the reader keeps the print in its own storage.
    public var onDevice: Bool
    /// For a print kept on a reader whose storage was listed: ``ReaderState/inStep`` or
    /// ``ReaderState/missingOnReader``; absent when the reader was not compared.
    public var readerState: ReaderState?

    /// A report.
    public init(user: String, finger: String, driver: String, deviceID: String, enrolled: Date, onDevice: Bool,
                readerState: ReaderState? = nil) {
        self.user = user
        self.finger = finger
        self.driver = driver
        self.deviceID = deviceID
        self.enrolled = enrolled
        self.onDevice = onDevice
        self.readerState = readerState
    }
}

/// The answer of verify and identify.
public struct MatchReport: Codable, Sendable, Equatable {
    /// Whether an enrolled print matched.
    public var match: Bool
    /// Whose print matched (verify: also whose prints were tried).
    public var user: String?
    /// Which finger matched.
    public var finger: String?
    /// After a no-match: failed touches left before a lockout starts.
    public var attemptsLeft: Int?

    /// A report.
    public init(match: Bool, user: String?, finger: String?, attemptsLeft: Int? = nil) {
        self.match = match
        self.user = user
        self.finger = finger
        self.attemptsLeft = attemptsLeft
    }
}

/// A stored secret, never its value.
public struct ItemReport: Codable, Sendable, Equatable {
    /// The item's name.
    public var name: String
    /// Its access policy in string form.
    public var policy: String
    /// Whether every release needs a fresh touch.
    public var fresh: Bool
    /// Whether it is bound to the enrolled fingers (`biometry-current-set`).
    public var boundToFingers: Bool
    /// Whether an enrollment change destroyed its key.
    public var invalidated: Bool
    /// When it was last stored.
    public var updated: Date

    /// A report.
    public init(name: String, policy: String, fresh: Bool, boundToFingers: Bool, invalidated: Bool, updated: Date) {
        self.name = name
        self.policy = policy
        self.fresh = fresh
        self.boundToFingers = boundToFingers
        self.invalidated = invalidated
        self.updated = updated
    }
}

/// The tunable limits (`touchgate policy`).
public struct SettingsReport: Codable, Sendable, Equatable {
    /// Failed touches in a row that start a lockout.
    public var lockoutThreshold: Int
    /// How long a lockout lasts.
    public var lockoutDurationSeconds: Int
    /// How long a touch may be reused.
    public var sessionTimeoutSeconds: Int
    /// Idle time that ends the reuse session.
    public var idleTimeoutSeconds: Int
    /// Failures since the passphrase after which only the passphrase helps.
    public var passphraseOnlyThreshold: Int
    /// How long an approved `touchgate run` may run again without a touch (0: never).
    public var runLeaseSeconds: Int
    /// The policy of new passkeys (`biometry-any` unless set).
    public var passkeyPolicy: String

    /// A report.
    public init(lockoutThreshold: Int, lockoutDurationSeconds: Int, sessionTimeoutSeconds: Int,
                idleTimeoutSeconds: Int, passphraseOnlyThreshold: Int, runLeaseSeconds: Int = 0,
                passkeyPolicy: String = "biometry-any") {
        self.runLeaseSeconds = runLeaseSeconds
        self.passkeyPolicy = passkeyPolicy
        self.lockoutThreshold = lockoutThreshold
        self.lockoutDurationSeconds = lockoutDurationSeconds
        self.sessionTimeoutSeconds = sessionTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.passphraseOnlyThreshold = passphraseOnlyThreshold
    }
}

/// `touchgate status`: state only, never a secret.
public struct StatusReport: Codable, Sendable, Equatable {
    /// The reuse session.
    public struct Session: Codable, Sendable, Equatable {
        /// Whether a touch or passphrase can be reused now.
        public var active: Bool
        /// Seconds of reuse left.
        public var remainingSeconds: Int?
        /// Whether a recent touch can be reused now (else a finger-guarded secret needs a touch).
        public var touchReusable: Bool
        /// A session.
        public init(active: Bool, remainingSeconds: Int?, touchReusable: Bool) {
            self.active = active
            self.remainingSeconds = remainingSeconds
            self.touchReusable = touchReusable
        }

        /// Writes `remaining-seconds` as `null` when there is none, so scripts always find the key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(active, forKey: .active)
            try container.encode(remainingSeconds, forKey: .remainingSeconds)
            try container.encode(touchReusable, forKey: .touchReusable)
        }
    }

    /// Failure counting and lockout.
    public struct Lockout: Codable, Sendable, Equatable {
        /// Whether fingerprints are refused now.
        public var lockedOut: Bool
        /// Seconds until a timed lockout ends.
        public var remainingSeconds: Int?
        /// Whether only the passphrase lifts it.
        public var passphraseOnly: Bool
        /// Failures in a row.
        public var consecutiveFailures: Int
        /// Failures since the passphrase.
        public var cumulativeFailures: Int
        /// Failures in a row that start a lockout.
        public var threshold: Int
        /// Lockout state.
        public init(lockedOut: Bool, remainingSeconds: Int?, passphraseOnly: Bool, consecutiveFailures: Int,
                    cumulativeFailures: Int, threshold: Int) {
            self.lockedOut = lockedOut
            self.remainingSeconds = remainingSeconds
            self.passphraseOnly = passphraseOnly
            self.consecutiveFailures = consecutiveFailures
            self.cumulativeFailures = cumulativeFailures
            self.threshold = threshold
        }

        /// Writes `remaining-seconds` as `null` when no timer runs, so scripts always find the key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(lockedOut, forKey: .lockedOut)
            try container.encode(remainingSeconds, forKey: .remainingSeconds)
            try container.encode(passphraseOnly, forKey: .passphraseOnly)
            try container.encode(consecutiveFailures, forKey: .consecutiveFailures)
            try container.encode(cumulativeFailures, forKey: .cumulativeFailures)
            try container.encode(threshold, forKey: .threshold)
        }
    }

    /// Which process enforces the guarantees: `personal` (this user's own process over files
    /// in their home) or `system` (touchgated, under its own uid).
    public var mode: String?
    /// What that mode protects against, in one sentence.
    public var trustBoundary: String?
    /// Whether a vault exists.
    public var initialized: Bool
    /// Whether the vault key is not held (nil without a vault).
    public var locked: Bool?
    /// When the held key goes at the latest (sooner after the idle timeout).
    public var keyExpires: Date?
    /// The reuse session (nil without a vault).
    public var session: Session?
    /// Lockout (nil without a vault, or when the state could not be trusted).
    public var lockout: Lockout?
    /// Why the passphrase is needed before a fingerprint alone opens anything, if it is.
    public var passphraseRequired: String?
    /// How many secrets are stored.
    public var items: Int?
    /// A problem found while reading the state (tampering), with the command that repairs it.
    public var problem: String?
    /// For a vault bound to a TPM: that the TPM guards the key, its rollback counter and its
    /// dictionary-attack state, in one line (`touchgate tpm status` says more). Absent otherwise.
    public var tpm: String?
    /// What is enrolled.
    public var enrolled: [PrintReport]
    /// Readers found now.
    public var readers: [ReaderReport]
    /// How Touchgate reaches the reader now: `libfprint` (directly) or `fprintd`.
    public var readerBackend: String = "libfprint"

    /// A report without a vault.
    public init(enrolled: [PrintReport], readers: [ReaderReport]) {
        initialized = false
        self.enrolled = enrolled
        self.readers = readers
    }
}

/// One audit record, as stored (verify the chain to trust it).
///
/// `audit show --json` leaves the chain fields out; `audit export` fills them in, so an
/// export line holds the same keys as a shown record plus `unix-time`, `boot-id`,
/// `prev-mac` and `mac`: everything the record's MAC covers.
public struct AuditRecordReport: Codable, Sendable, Equatable {
    /// Position in the chain.
    public var seq: Int64
    /// Wall-clock time (whole seconds on the wire; ``unixTime`` is exact).
    public var time: Date
    /// Seconds since boot when written.
    public var bootTime: Double
    /// The OS uid of the writer.
    public var uid: UInt32
    /// Its login name.
    public var login: String
    /// The vault user acting, if any.
    public var vaultUser: String?
    /// What happened (`auth.attempt`, `item.read`, `session.end`, …).
    public var event: String
    /// The item, if any.
    public var item: String?
    /// `success`, `failure`, `denied` or `error`.
    public var outcome: String
    /// Why, in words.
    public var reason: String
    /// Chain field: the wall time exactly as stored, Unix seconds with fraction.
    public var unixTime: Double?
    /// Chain field: the kernel's boot id when the record was written.
    public var bootID: String?
    /// Chain field: the previous record's MAC (or the genesis value or prune anchor), lowercase hex.
    public var prevMAC: String?
    /// Chain field: this record's keyed BLAKE2b-256 MAC, lowercase hex.
    public var mac: String?
    /// Public chain: the trail's id, lowercase hex.
    public var trail: String?
    /// Public chain: the previous record's public link, lowercase hex.
    public var prevChain: String?
    /// Public chain: this record's public link (unkeyed BLAKE2b-256 over the trail, the
    /// previous link and every field the MAC covers, the MAC included), lowercase hex.
    public var chain: String?

    /// A report; the chain fields are left out unless given.
    public init(seq: Int64, time: Date, bootTime: Double, uid: UInt32, login: String, vaultUser: String?,
                event: String, item: String?, outcome: String, reason: String, unixTime: Double? = nil,
                bootID: String? = nil, prevMAC: String? = nil, mac: String? = nil) {
        self.seq = seq
        self.time = time
        self.bootTime = bootTime
        self.uid = uid
        self.login = login
        self.vaultUser = vaultUser
        self.event = event
        self.item = item
        self.outcome = outcome
        self.reason = reason
        self.unixTime = unixTime
        self.bootID = bootID
        self.prevMAC = prevMAC
        self.mac = mac
    }

    // `prevMAC` is spelled `prevMac` so that the wire's kebab-case key, `prev-mac`, reads
    // back: the decoder turns `prev-mac` into `prevMac` (it knows only the `ID` acronym).
    private enum CodingKeys: String, CodingKey {
        case seq, time, bootTime, uid, login, vaultUser, event, item, outcome, reason, unixTime, bootID, mac
        case prevMAC = "prevMac"
        case trail, prevChain, chain
    }
}

/// The signed head of a trail's public chain: the last line of `touchgate audit export`
/// (`{"seal": {…}}`), which `touchgate audit verify --public-key` checks the records against.
public struct AuditSealReport: Codable, Sendable, Equatable {
    /// The trail's id, lowercase hex.
    public var trail: String
    /// The sequence of the last record it vouches for.
    public var seq: Int64
    /// That record's public link, lowercase hex.
    public var chain: String
    /// The Ed25519 public key that signed it, lowercase hex.
    public var publicKey: String
    /// The Ed25519 signature, lowercase hex.
    public var signature: String

    /// A seal report.
    public init(trail: String, seq: Int64, chain: String, publicKey: String, signature: String) {
        self.trail = trail
        self.seq = seq
        self.chain = chain
        self.publicKey = publicKey
        self.signature = signature
    }
}

/// The export line that carries the seal.
public struct AuditSealLine: Codable, Sendable, Equatable {
    /// The seal.
    public var seal: AuditSealReport

    /// The line for `seal`.
    public init(seal: AuditSealReport) {
        self.seal = seal
    }
}

/// `touchgate audit public-key`: the key that signs this trail's seal.
public struct PublicKeyReport: Codable, Sendable, Equatable {
    /// Ed25519 public key, lowercase hex.
    public var publicKey: String

    /// A report.
    public init(publicKey: String) {
        self.publicKey = publicKey
    }
}

/// What `touchgate audit verify --public-key` found in an export.
public struct PublicVerificationReport: Codable, Sendable, Equatable {
    /// Records checked.
    public var records: Int
    /// The first record's sequence (earlier ones were pruned or not exported), if any.
    public var first: Int64?
    /// The sequence the signed head vouches for.
    public var signedThrough: Int64
    /// The trail's id, lowercase hex.
    public var trail: String
    /// The prunes the export records (their `audit.prune` records, oldest first); the last
    /// one that removed anything accounts for where the export begins.
    public var prunes: [AuditPruneReport]

    /// A report.
    public init(records: Int, first: Int64?, signedThrough: Int64, trail: String, prunes: [AuditPruneReport] = []) {
        self.records = records
        self.first = first
        self.signedThrough = signedThrough
        self.trail = trail
        self.prunes = prunes
    }
}

/// One prune that an export records: what it removed and when.
public struct AuditPruneReport: Codable, Sendable, Equatable {
    /// The `audit.prune` record's sequence.
    public var seq: Int64
    /// When the prune ran.
    public var time: Date
    /// How many records it removed.
    public var removed: Int
    /// The last record it removed.
    public var through: Int64

    /// A report.
    public init(seq: Int64, time: Date, removed: Int, through: Int64) {
        self.seq = seq
        self.time = time
        self.removed = removed
        self.through = through
    }
}
