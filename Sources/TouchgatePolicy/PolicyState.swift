/// Everything the policy core remembers between attempts and processes.
///
/// Persisted by a ``PolicyStateStore`` (the vault keeps it in SQLite). All durations are
/// on the monotonic boot clock; an instant from a previous boot is treated
/// conservatively (see ``LockoutState`` and ``SessionState``). `Codable`, so a store may
/// keep it as one JSON value; the fields are public so it may also map them to columns.
public struct PolicyState: Hashable, Sendable, Codable {
    /// Failure counters and the lockout deadline.
    public var lockout: LockoutState
    /// The current reuse session, if any.
    public var session: SessionState?
    /// When the passphrase was last verified (boot and boot time).
    ///
    /// Fingerprint-only access requires this to be on the current boot and within
    /// ``PolicyConfiguration/passphraseMaxAge``.
    public var lastPassphraseEntry: MonotonicInstant?

    /// A fresh state: no failures, no session, passphrase never entered.
    public init(
        lockout: LockoutState = LockoutState(),
        session: SessionState? = nil,
        lastPassphraseEntry: MonotonicInstant? = nil
    ) {
        self.lockout = lockout
        self.session = session
        self.lastPassphraseEntry = lastPassphraseEntry
    }
}

/// Failed-attempt counters and the timed lockout, like pam_faillock's tally.
///
/// Only a genuine no-match is counted. A timed lockout starts when
/// ``consecutiveFailures`` reaches the threshold and ends (resetting that counter) when
/// its monotonic deadline passes. ``cumulativeFailures`` counts failures since the last
/// passphrase entry; at the passphrase-only threshold only the passphrase clears it.
///
/// Reboot rule: a deadline recorded on an earlier boot cannot be compared with the
/// current boot's clock, so the lockout restarts with its full duration from the first
/// moment the new boot looks at it. Rebooting never shortens a lockout.
public struct LockoutState: Hashable, Sendable, Codable {
    /// Failed matches since the last success or the end of the last lockout.
    public var consecutiveFailures: Int
    /// Failed matches since the last passphrase entry.
    public var cumulativeFailures: Int
    /// When the current timed lockout ends, or nil when none is running.
    public var lockedUntil: MonotonicInstant?

    /// Creates lockout state.
    public init(consecutiveFailures: Int = 0, cumulativeFailures: Int = 0, lockedUntil: MonotonicInstant? = nil) {
        self.consecutiveFailures = consecutiveFailures
        self.cumulativeFailures = cumulativeFailures
        self.lockedUntil = lockedUntil
    }
}

/// A reuse session: recent proofs that later requests may rely on without a new touch.
///
/// Each proof is reusable for ``PolicyConfiguration/sessionTimeout`` after it was made;
/// the whole session ends after ``PolicyConfiguration/idleTimeout`` without use, on a
/// reboot, on lockout, on an explicit lock, and (for the fingerprint proof) when the
/// enrolled set changes.
public struct SessionState: Hashable, Sendable, Codable {
    /// The last fingerprint match, if still part of the session.
    public var biometry: BiometricProof?
    /// When the passphrase was last verified within this session.
    public var passphraseVerifiedAt: MonotonicInstant?
    /// The last time the session was created or used.
    public var lastActivity: MonotonicInstant

    /// Creates a session.
    public init(biometry: BiometricProof? = nil, passphraseVerifiedAt: MonotonicInstant? = nil, lastActivity: MonotonicInstant) {
        self.biometry = biometry
        self.passphraseVerifiedAt = passphraseVerifiedAt
        self.lastActivity = lastActivity
    }
}

/// A fingerprint match remembered by a session.
public struct BiometricProof: Hashable, Sendable, Codable {
    /// When the finger matched.
    public var matchedAt: MonotonicInstant
    /// Which enrolled print matched.
    public var printID: EnrolledPrintID
    /// The enrolled set at the time of the match; the proof is void once it changes.
    public var enrollmentState: EnrollmentState

    /// Creates a proof.
    public init(matchedAt: MonotonicInstant, printID: EnrolledPrintID, enrollmentState: EnrollmentState) {
        self.matchedAt = matchedAt
        self.printID = printID
        self.enrollmentState = enrollmentState
    }
}
