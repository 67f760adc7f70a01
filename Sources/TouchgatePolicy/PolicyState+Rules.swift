// The rules that change PolicyState. Every function here runs inside one store
// transaction, so it must stay synchronous and free of side effects besides `self`.

/// A change the rules made on their own while bringing state up to date.
enum StateTransition: Hashable, Sendable {
    /// A timed lockout's deadline passed.
    case lockoutExpired
    /// A lockout from an earlier boot restarted with its full duration.
    case lockoutRestartedAfterReboot
    /// The session ended for the given reason.
    case sessionEnded(String)
}

/// What recording a no-match did.
enum FailureEffect: Hashable, Sendable {
    /// Counted; this many more failures are allowed before a lockout.
    case counted(attemptsBeforeLockout: Int)
    /// This failure started a lockout.
    case lockoutStarted(LockoutInfo)
    /// Counted while a lockout (started by a concurrent attempt) was already running.
    case alreadyLocked(LockoutInfo)
}

extension PolicyState {
    /// Applies what time alone changes: expired lockouts end, lockouts from an earlier
    /// boot restart, idle or expired sessions end.
    mutating func normalize(at now: MonotonicInstant, configuration: PolicyConfiguration) -> [StateTransition] {
        var transitions: [StateTransition] = []
        if let until = lockout.lockedUntil {
            if until.bootID != now.bootID {
                lockout.lockedUntil = now.advanced(by: configuration.lockoutDuration)
                transitions.append(.lockoutRestartedAfterReboot)
            } else if now.sinceBoot >= until.sinceBoot {
                lockout.lockedUntil = nil
                lockout.consecutiveFailures = 0
                transitions.append(.lockoutExpired)
            }
        }
        if var current = session {
            if let idle = now.elapsed(since: current.lastActivity) {
                if idle < .zero || idle >= configuration.idleTimeout {
                    session = nil
                    transitions.append(.sessionEnded("idle for \(idle.components.seconds) s"))
                } else {
                    if let proof = current.biometry,
                        !Self.isWithin(configuration.sessionTimeout, of: proof.matchedAt, now: now)
                    {
                        current.biometry = nil
                    }
                    if let entered = current.passphraseVerifiedAt,
                        !Self.isWithin(configuration.sessionTimeout, of: entered, now: now)
                    {
                        current.passphraseVerifiedAt = nil
                    }
                    if current.biometry == nil && current.passphraseVerifiedAt == nil {
                        session = nil
                        transitions.append(.sessionEnded("session timeout"))
                    } else {
                        session = current
                    }
                }
            } else {
                session = nil
                transitions.append(.sessionEnded("machine restarted"))
            }
        }
        return transitions
    }

    /// The lockout in force (call after ``normalize(at:configuration:)``), or nil.
    func lockoutInfo(at now: MonotonicInstant, configuration: PolicyConfiguration) -> LockoutInfo? {
        if lockout.cumulativeFailures >= configuration.passphraseOnlyThreshold {
            return LockoutInfo(remaining: nil, passphraseOnly: true)
        }
        if let until = lockout.lockedUntil {
            let remaining = until.elapsed(since: now) ?? configuration.lockoutDuration
            return LockoutInfo(remaining: remaining, passphraseOnly: false)
        }
        return nil
    }

    /// Why fingerprint-only access needs the passphrase first, or nil when it does not.
    func passphraseRequirement(at now: MonotonicInstant, configuration: PolicyConfiguration) -> PassphraseRequirement? {
        guard let entered = lastPassphraseEntry, let age = now.elapsed(since: entered) else {
            return .notEnteredSinceBoot
        }
        guard age >= .zero, age <= configuration.passphraseMaxAge else { return .expired }
        return nil
    }

    /// Counts a genuine no-match and starts a lockout when a threshold is reached.
    mutating func recordNoMatch(at now: MonotonicInstant, configuration: PolicyConfiguration) -> FailureEffect {
        let wasLocked = lockoutInfo(at: now, configuration: configuration)
        lockout.consecutiveFailures += 1
        lockout.cumulativeFailures += 1
        if let wasLocked {
            return .alreadyLocked(lockoutInfo(at: now, configuration: configuration) ?? wasLocked)
        }
        if lockout.cumulativeFailures >= configuration.passphraseOnlyThreshold {
            lockout.lockedUntil = nil
            session = nil
            return .lockoutStarted(LockoutInfo(remaining: nil, passphraseOnly: true))
        }
        if lockout.consecutiveFailures >= configuration.lockoutThreshold {
            lockout.lockedUntil = now.advanced(by: configuration.lockoutDuration)
            session = nil
            return .lockoutStarted(LockoutInfo(remaining: configuration.lockoutDuration, passphraseOnly: false))
        }
        return .counted(
            attemptsBeforeLockout: min(
                configuration.lockoutThreshold - lockout.consecutiveFailures,
                configuration.passphraseOnlyThreshold - lockout.cumulativeFailures))
    }

    /// Records a match: the consecutive count restarts (the cumulative one does not;
    /// only the passphrase clears it).
    mutating func recordMatch() {
        lockout.consecutiveFailures = 0
    }

    /// Records a verified passphrase: every lockout and counter is cleared.
    /// - Returns: whether a lockout was in force.
    mutating func recordPassphraseEntry(at now: MonotonicInstant, configuration: PolicyConfiguration) -> Bool {
        let wasLocked = lockoutInfo(at: now, configuration: configuration) != nil
        lockout = LockoutState()
        lastPassphraseEntry = now
        return wasLocked
    }

    /// Whether `instant` lies on the current boot and less than `window` ago.
    static func isWithin(_ window: Duration, of instant: MonotonicInstant, now: MonotonicInstant) -> Bool {
        guard let elapsed = now.elapsed(since: instant) else { return false }
        return elapsed >= .zero && elapsed < window
    }
}
