// Unlock, lock, enrollment changes and policy changes: decisions outside item access.

extension AccessEvaluator {
    /// Unlocks with the passphrase: records the entry (boot and boot time) that allows
    /// fingerprint-only access for the next 72 hours of this boot, lifts every lockout,
    /// and starts a session.
    /// - Throws: ``AuthorizationError/authenticationFailed(_:)`` for a wrong passphrase,
    ///   ``AuthorizationError/cancelled``, or ``AuthorizationError/passphraseRequired(_:)``
    ///   when it cannot be asked.
    public func unlock(passphrase: any PassphraseVerifier) async throws(AuthorizationError) -> Grant {
        var attempt = Attempt(action: "unlock Touchgate", passphrase: passphrase)
        do {
            try await provePassphrase(&attempt, requirement: .requiredByPolicy)
        } catch {
            try emit(event(
                .unlock, at: clock.reading(), factor: .passphrase,
                outcome: error.auditOutcome, reason: error.description))
            throw error
        }
        let now = clock.reading()
        try refreshSession(with: attempt, at: now,
                           recording: event(.unlock, at: now, factor: .passphrase, outcome: .success,
                                            reason: "passphrase verified"))
        return Grant(
            action: .unlock, itemName: nil, factors: [.passphrase], matchedPrint: nil,
            reusedSession: false, decidedAt: now, reason: "passphrase verified")
    }

    /// Ends the session: the next access needs a new touch or passphrase entry.
    /// The passphrase-entry time (72-hour rule) and lockout counters are kept.
    public func lock(reason: String = "locked by user") throws(AuthorizationError) {
        let now = clock.reading()
        try withState(at: now, { $0.session = nil },
                      recording: { [event(.lock, at: now, outcome: .success, reason: reason)] })
    }

    /// Authorizes enrolling or deleting a finger.
    ///
    /// Once a vault exists this always asks for the passphrase (a session does not
    /// count). Before the first vault exists there is nothing to protect and the change
    /// is allowed. Call ``recordEnrollmentChange(_:print:newState:)`` after the change.
    public func authorizeEnrollmentChange(
        _ change: EnrollmentChange, vaultExists: Bool, passphrase: (any PassphraseVerifier)?
    ) async throws(AuthorizationError) -> Grant {
        let start = clock.reading()
        guard vaultExists else {
            return Grant(
                action: change.auditKind, itemName: nil, factors: [], matchedPrint: nil,
                reusedSession: false, decidedAt: start, reason: "no vault yet")
        }
        var attempt = Attempt(action: "\(change.rawValue) a finger", passphrase: passphrase)
        do {
            try await provePassphrase(&attempt, requirement: .enrollmentChange)
        } catch {
            try emit(event(
                change.auditKind, at: clock.reading(), outcome: error.auditOutcome,
                reason: error.description))
            throw error
        }
        let now = clock.reading()
        try refreshSession(with: attempt, at: now)
        return Grant(
            action: change.auditKind, itemName: nil, factors: [.passphrase], matchedPrint: nil,
            reusedSession: false, decidedAt: now, reason: "passphrase verified")
    }

    /// Records a completed enroll or delete.
    ///
    /// Ends the session's fingerprint proof (it was made against the old set). Items bound
    /// to the old state are invalid from now on (see ``ItemDescriptor/validity(current:)``);
    /// the vault destroys their keys.
    public func recordEnrollmentChange(
        _ change: EnrollmentChange, print: EnrolledPrintID, newState: EnrollmentState
    ) throws(AuthorizationError) {
        let now = clock.reading()
        try withState(at: now) { state in
            state.session?.biometry = nil
            if let session = state.session, session.passphraseVerifiedAt == nil {
                state.session = nil
            }
        }
        try emit(event(
            change.auditKind, at: now, subject: print.rawValue, outcome: .success,
            reason: "\(change == .delete ? "deleted from" : "added to") the enrolled set, which is now "
                + newState.hexString.prefix(16)))
    }

    /// Records that an item's access policy was set or changed.
    public func recordPolicyChange(item: String, from old: AccessPolicy?, to new: AccessPolicy) throws(AuthorizationError) {
        try emit(event(
            .policyChanged, at: clock.reading(), subject: item, outcome: .success,
            reason: "\(old?.description ?? "none") -> \(new)"))
    }

    /// The current lockout, session and passphrase state, for display.
    /// Applies (and audits) what time alone changed, like any other decision.
    public func status() throws(AuthorizationError) -> PolicyStatus {
        let configuration = configuration
        let now = clock.reading()
        // Read first: only when time has changed the state (a lockout over, a session
        // ended or narrowed) does it go through an update, which saves and records that.
        // Otherwise a status takes no write lock, and many at once do not queue for it.
        let stored: PolicyState
        do {
            stored = try store.read()
        } catch let error as AuthorizationError {
            throw error
        } catch {
            throw .stateUnavailable(String(describing: error))
        }
        if let status = Self.status(of: stored, at: now.monotonic, configuration: configuration) { return status }
        return try withState(at: now) { state in Self.report(state, at: now.monotonic, configuration: configuration) }
    }

    /// The status `state` shows at `now`, when time alone has not changed it; nil when it
    /// has (a lockout over, a session ended), which only ``status()`` may apply and record.
    /// For a host that already holds the state it last read (touchgated's status).
    public static func status(of state: PolicyState, at now: MonotonicInstant,
                              configuration: PolicyConfiguration) -> PolicyStatus? {
        var normalized = state
        _ = normalized.normalize(at: now, configuration: configuration)
        return normalized == state ? report(state, at: now, configuration: configuration) : nil
    }

    private static func report(_ state: PolicyState, at now: MonotonicInstant,
                               configuration: PolicyConfiguration) -> PolicyStatus {
        PolicyStatus(
            lockout: state.lockoutInfo(at: now, configuration: configuration),
            consecutiveFailures: state.lockout.consecutiveFailures,
            cumulativeFailures: state.lockout.cumulativeFailures,
            passphraseRequirement: state.passphraseRequirement(at: now, configuration: configuration),
            sessionActive: state.session != nil)
    }
}
