// A bare fingerprint check (verify, identify): the same lockout, counting and audit as
// item access, without releasing anything.

extension AccessEvaluator {
    /// Checks the finger on the reader against the enrolled prints, as one counted and
    /// audited authentication attempt that releases nothing.
    ///
    /// The fingerprint path is the one ``authorize(item:operation:enrollment:sensor:passphrase:)``
    /// uses, so a bare check cannot serve as an unlimited match oracle:
    /// - during a lockout (timed, or passphrase-only after
    ///   ``PolicyConfiguration/passphraseOnlyThreshold`` failures) it is refused before
    ///   the reader is asked;
    /// - a genuine no-match is counted toward lockout and may start one (audited as
    ///   `lockout.start`); a match restarts the consecutive count; poor captures are
    ///   retried within ``PolicyConfiguration/maximumScans`` scans; timeouts, cancel and
    ///   unplug are not counted;
    /// - every outcome, refusals before the reader included, is one `auth.attempt` record
    ///   whose reason begins with `action` and whose subject is the matched print. No
    ///   other record is written for the operation.
    ///
    /// Two rules of item access deliberately do not apply:
    /// - the passphrase need not have been entered this boot or within
    ///   ``PolicyConfiguration/passphraseMaxAge``: that rule guards fingerprint-only
    ///   release of key material, and a check releases none (unless `guardsKeyMaterial`:
    ///   a check whose match lets the vault use a key afterwards, as a passkey's
    ///   verification does, is refused before the reader like a release, and recorded);
    /// - no session is started, refreshed or reused: a check must not let a later read
    ///   skip its own touch. (A no-match that starts a lockout still ends a running
    ///   session, as it does for item access.)
    ///
    /// - Parameters:
    ///   - action: what the touch is for, completing the prompt "Touch the fingerprint
    ///     reader to …" and opening each audit reason (e.g. `verify`, `identify`); no secret.
    ///   - enrollment: what is enrolled now.
    ///   - sensor: the reader, or nil when none is available.
    ///   - guardsKeyMaterial: the match lets key material be used afterwards: the
    ///     passphrase-freshness rule applies.
    /// - Returns: a grant with action ``PolicyAuditEvent/Kind/authenticationAttempt``, no
    ///   item, factor ``AuthenticationFactor/biometry`` and the matched print.
    /// - Throws: ``AuthorizationError/lockedOut(_:)``, ``AuthorizationError/nothingEnrolled``,
    ///   ``AuthorizationError/readerUnavailable``, ``AuthorizationError/passphraseRequired(_:)`` (with
    ///   `guardsKeyMaterial`), ``AuthorizationError/authenticationFailed(_:)``
    ///   (no match or poor capture), ``AuthorizationError/cancelled``,
    ///   ``AuthorizationError/readerDisconnected`` or ``AuthorizationError/stateUnavailable(_:)``.
    public func authenticate(
        action: String,
        enrollment: EnrollmentStatus,
        sensor: (any BiometricSensor)?,
        guardsKeyMaterial: Bool = false
    ) async throws(AuthorizationError) -> Grant {
        var attempt = Attempt(action: action, enrollment: enrollment, sensor: sensor, purpose: .check)
        attempt.guardsKeyMaterial = guardsKeyMaterial
        try await proveBiometry(&attempt)
        guard let print = attempt.matchedPrint else {
            preconditionFailure("proveBiometry returned without a matched print")
        }
        return Grant(
            action: .authenticationAttempt, itemName: nil, factors: [.biometry], matchedPrint: print,
            reusedSession: false, decidedAt: clock.reading(), reason: attempt.reasonText)
    }
}
