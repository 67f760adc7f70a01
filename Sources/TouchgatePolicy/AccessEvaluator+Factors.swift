// Walking a policy tree and proving its leaves.

extension AccessEvaluator {
    /// Proves `policy`, asking the user as needed, or throws why it cannot be proven.
    func satisfy(_ policy: AccessPolicy, _ attempt: inout Attempt) async throws(AuthorizationError) {
        switch policy {
        case .biometryAny, .biometryCurrentSet:
            // Current-set binding was checked for the whole item before the walk began.
            try await proveBiometry(&attempt)
        case .passphrase:
            try await provePassphrase(&attempt, requirement: .requiredByPolicy)
        case .userPresence:
            try await satisfy(.or(.biometryAny, .passphrase), &attempt)
        case .and(let left, let right):
            // Ask for the passphrase first: once entered, the touch that follows is not a
            // fingerprint-only unlock and needs no earlier passphrase entry.
            let (first, second) = right.isPassphraseOnly && !left.isPassphraseOnly ? (right, left) : (left, right)
            try await satisfy(first, &attempt)
            try await satisfy(second, &attempt)
        case .or(let left, let right):
            do {
                try await satisfy(left, &attempt)
            } catch {
                // A cancel is the user's answer; a broken store or audit log fails closed.
                if error == .cancelled { throw error }
                if case .stateUnavailable = error { throw error }
                let asked = attempt.interactions
                attempt.fallbackReason = error.userMessage
                defer { attempt.fallbackReason = nil }
                do {
                    try await satisfy(right, &attempt)
                } catch let fallbackError {
                    // If the fallback never reached the user, the first reason is the useful one.
                    throw attempt.interactions == asked ? error : fallbackError
                }
            }
        }
    }

    /// Proves a fingerprint: lockout, passphrase freshness (for a release), enrollment,
    /// then the reader, which is restarted after poor captures within
    /// ``PolicyConfiguration/maximumScans``.
    func proveBiometry(_ attempt: inout Attempt) async throws(AuthorizationError) {
        if attempt.matchedPrint != nil { return }
        let configuration = configuration
        let now = clock.reading()
        let lockout: LockoutInfo?
        let requirement: PassphraseRequirement?
        do {
            (lockout, requirement) = try withState(at: now) { state in
                (
                    state.lockoutInfo(at: now.monotonic, configuration: configuration),
                    state.passphraseRequirement(at: now.monotonic, configuration: configuration)
                )
            }
        } catch {
            try refuseBeforeAsking(error, attempt)
        }
        if let lockout { try refuseBeforeAsking(.lockedOut(lockout), attempt) }
        if !attempt.passphraseVerified, let requirement {
            if attempt.purpose == .release { throw .passphraseRequired(requirement) }
            if attempt.guardsKeyMaterial { try refuseBeforeAsking(.passphraseRequired(requirement), attempt) }
        }
        guard let enrollment = attempt.enrollment, enrollment.printCount > 0 else {
            try refuseBeforeAsking(.nothingEnrolled, attempt)
        }
        guard let sensor = attempt.sensor else { try refuseBeforeAsking(.readerUnavailable, attempt) }

        let prompt = "Touch the fingerprint reader to \(attempt.action)"
        var poorCaptures = 0
        while true {
            if Task.isCancelled {
                try recordUncounted(.cancelled, attempt)
            }
            attempt.interactions += 1
            let outcome: SensorOutcome
            do {
                outcome = try await sensor.identify(prompt: prompt)
            } catch {
                switch error {
                case .retry:
                    poorCaptures += 1
                    if poorCaptures < configuration.maximumScans { continue }
                    try recordUncounted(.authenticationFailed(.poorCapture(attempts: poorCaptures)), attempt)
                case .timeout: try recordUncounted(.authenticationFailed(.timedOut), attempt)
                case .cancelled: try recordUncounted(.cancelled, attempt)
                case .unavailable: try recordUncounted(.readerUnavailable, attempt)
                case .disconnected: try recordUncounted(.readerDisconnected, attempt)
                }
            }
            let after = clock.reading()
            switch outcome {
            case .match(let print):
                // The state change and its record commit together (one durable commit).
                try withState(at: after, { $0.recordMatch() }) { _ in
                    [event(.authenticationAttempt, at: after, subject: print.rawValue, factor: .biometry,
                           outcome: .success, reason: attempt.auditReason("fingerprint matched"))]
                }
                attempt.matchedPrint = print
                return
            case .noMatch:
                let effect = try withState(at: after, {
                    $0.recordNoMatch(at: after.monotonic, configuration: configuration)
                }) { effect in
                    var events = [event(.authenticationAttempt, at: after, factor: .biometry, outcome: .failure,
                                        reason: attempt.auditReason("no match"))]
                    if case .lockoutStarted(let info) = effect {
                        let reason =
                            info.passphraseOnly
                            ? "\(configuration.passphraseOnlyThreshold) failures since the last passphrase entry: passphrase required"
                            : "\(configuration.lockoutThreshold) consecutive failures: locked for \(configuration.lockoutDuration.components.seconds) s"
                        events.append(event(.lockoutStarted, at: after, factor: .biometry, outcome: .success, reason: reason))
                    }
                    return events
                }
                switch effect {
                case .counted(let left):
                    throw .authenticationFailed(.noMatch(attemptsBeforeLockout: left))
                case .lockoutStarted(let info), .alreadyLocked(let info):
                    throw .lockedOut(info)
                }
            }
        }
    }

    /// Audits a reader outcome that is not counted toward lockout, then throws it.
    private func recordUncounted(_ error: AuthorizationError, _ attempt: Attempt) throws(AuthorizationError) -> Never {
        try emit(event(
            .authenticationAttempt, at: clock.reading(), factor: .biometry,
            outcome: .error, reason: attempt.auditReason("\(error.description) (not counted)")))
        throw error
    }

    /// Throws a refusal made before the reader was asked. A release leaves the record to
    /// its operation (e.g. `item.read`, denied); a bare check has no such record, so the
    /// refusal is its `auth.attempt`.
    private func refuseBeforeAsking(_ error: AuthorizationError, _ attempt: Attempt) throws(AuthorizationError) -> Never {
        if attempt.purpose == .check {
            try emit(event(
                .authenticationAttempt, at: clock.reading(), factor: .biometry,
                outcome: error.auditOutcome, reason: attempt.auditReason(error.description)))
        }
        throw error
    }

    /// Proves the passphrase by asking for it; success clears every lockout.
    func provePassphrase(_ attempt: inout Attempt, requirement: PassphraseRequirement) async throws(AuthorizationError) {
        if attempt.passphraseVerified { return }
        guard let verifier = attempt.passphrase else { throw .passphraseRequired(requirement) }
        if Task.isCancelled { throw .cancelled }
        attempt.interactions += 1
        let correct: Bool
        do {
            let prompt = "Passphrase to \(attempt.action)"
            correct = try await verifier.verifyPassphrase(
                prompt: attempt.fallbackReason.map { "\($0) Instead: \(prompt.prefix(1).lowercased())\(prompt.dropFirst())" }
                    ?? prompt)
        } catch {
            switch error {
            case .cancelled:
                try emit(event(
                    .authenticationAttempt, at: clock.reading(), factor: .passphrase,
                    outcome: .error, reason: "cancelled"))
                throw .cancelled
            case .unavailable:
                attempt.interactions -= 1
                throw .passphraseRequired(requirement)
            }
        }
        let now = clock.reading()
        guard correct else {
            try emit(event(
                .authenticationAttempt, at: now, factor: .passphrase, outcome: .failure,
                reason: "wrong passphrase"))
            throw .authenticationFailed(.wrongPassphrase)
        }
        let configuration = configuration
        let wasLocked = try withState(at: now) {
            $0.recordPassphraseEntry(at: now.monotonic, configuration: configuration)
        }
        try emit(event(
            .authenticationAttempt, at: now, factor: .passphrase, outcome: .success,
            reason: "passphrase verified"))
        if wasLocked {
            try emit(event(.lockoutEnded, at: now, factor: .passphrase, outcome: .success, reason: "lifted by passphrase"))
        }
        attempt.passphraseVerified = true
    }
}
