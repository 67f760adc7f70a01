/// Decides whether an operation may proceed, asking for a finger or the passphrase as
/// the policy requires, and records every decision.
///
/// The flow of ``authorize(item:operation:enrollment:sensor:passphrase:)``:
/// 1. an item bound to an older enrolled set is refused (``AuthorizationError/itemInvalidated(item:)``);
/// 2. unless the item requires a fresh touch, a live session that satisfies the whole
///    policy is reused without asking anyone;
/// 3. otherwise the policy is walked: for a fingerprint, a running lockout refuses
///    *before* the reader is asked, fingerprint-only access needs a passphrase entered
///    this boot and within 72 hours, nothing enrolled or no reader refuses; the reader is
///    asked, and restarted after a poor capture until ``PolicyConfiguration/maximumScans``
///    scans were made; a genuine no-match is counted (in one store transaction) toward lockout.
///    `a&b` needs both (passphrase leaves are asked first); `a|b` tries `a`, then `b`
///    unless the user cancelled;
/// 4. the session is refreshed and the grant recorded.
///
/// A bare fingerprint check (`verify`, `identify`) goes through
/// ``authenticate(action:enrollment:sensor:)``: the same step 3 for a fingerprint, minus
/// the passphrase-freshness rule and the session.
///
/// A value type holding its collaborators; copy it freely. All state lives in the
/// ``PolicyStateStore``, so evaluators in several processes sharing a store agree.
public struct AccessEvaluator: Sendable {
    /// The limits in force.
    public let configuration: PolicyConfiguration
    /// The source of time.
    public let clock: any PolicyClock
    /// Where lockout, session and passphrase-freshness state lives.
    public let store: any PolicyStateStore
    /// Where audit events go.
    public let auditSink: any AuditSink
    /// Who is acting, as written into audit events (e.g. `uid=1000(alice)`).
    public let principal: String

    /// Creates an evaluator.
    public init(
        configuration: PolicyConfiguration = .standard,
        clock: any PolicyClock,
        store: any PolicyStateStore,
        auditSink: any AuditSink,
        principal: String
    ) {
        self.configuration = configuration
        self.clock = clock
        self.store = store
        self.auditSink = auditSink
        self.principal = principal
    }

    /// Authorizes one operation on one item.
    ///
    /// - Parameters:
    ///   - item: the item's name, policy and bound enrollment state.
    ///   - operation: read, write or delete; named in the audit record.
    ///   - enrollment: what is enrolled now.
    ///   - sensor: the reader, or nil when none is available.
    ///   - passphrase: a way to ask for the passphrase, or nil when it cannot be asked.
    ///   - purpose: what the access is for when it is more than the operation on the item
    ///     (a signature: `sign with 'work' to log in to host as git`): the prompt says it,
    ///     and every record of this decision starts with it.
    /// - Returns: a grant naming the factors relied on and why.
    /// - Throws: ``AuthorizationError``; every refusal is also audited.
    public func authorize(
        item: ItemDescriptor,
        operation: ItemOperation = .read,
        enrollment: EnrollmentStatus,
        sensor: (any BiometricSensor)?,
        passphrase: (any PassphraseVerifier)?,
        purpose: String? = nil
    ) async throws(AuthorizationError) -> Grant {
        let start = clock.reading()
        let reason = { (text: String) in purpose.map { "\($0): \(text)" } ?? text }
        if case .invalidated(let why) = item.validity(current: enrollment.state) {
            try emit(event(operation.auditKind, at: start, subject: item.name, outcome: .denied, reason: reason(why)))
            throw .itemInvalidated(item: item.name)
        }

        if !item.requiresFreshTouch,
            let grant = try reuseSession(for: item, operation: operation, enrollment: enrollment, at: start, reason: reason)
        {
            return grant
        }

        var attempt = Attempt(
            action: purpose ?? "\(operation.rawValue) '\(item.name)'", enrollment: enrollment,
            sensor: sensor, passphrase: passphrase)
        do {
            try await satisfy(item.policy, &attempt)
        } catch {
            try emit(event(
                operation.auditKind, at: clock.reading(), subject: item.name,
                outcome: error.auditOutcome, reason: reason(error.description)))
            throw error
        }

        let now = clock.reading()
        let grant = Grant(
            action: operation.auditKind, itemName: item.name, factors: attempt.factors,
            matchedPrint: attempt.matchedPrint, reusedSession: false, decidedAt: now,
            reason: reason(attempt.reasonText))
        try refreshSession(with: attempt, at: now,
                           recording: event(operation.auditKind, at: now, subject: item.name, outcome: .success,
                                            reason: grant.reason))
        return grant
    }

    /// Grants from the session if its live proofs satisfy the whole policy, and records the
    /// grant in the same transaction (one commit a reuse: it is the hot path of an agent's
    /// signatures). `reason` words the grant's reason as the caller's purpose.
    private func reuseSession(
        for item: ItemDescriptor, operation: ItemOperation, enrollment: EnrollmentStatus, at now: ClockReading,
        reason: (String) -> String
    ) throws(AuthorizationError) -> Grant? {
        let configuration = configuration
        return try withState(at: now, { state -> Grant? in
            guard var session = state.session else { return nil }
            let passphraseLive = session.passphraseVerifiedAt != nil
            var proof = session.biometry
            if proof?.enrollmentState != enrollment.state || enrollment.printCount == 0 {
                proof = nil
            }
            // Fingerprint-only reuse is bound by the same passphrase-freshness rule.
            if !passphraseLive,
                state.passphraseRequirement(at: now.monotonic, configuration: configuration) != nil
            {
                proof = nil
            }
            let policy = item.policy
            guard policy.satisfied(biometry: proof != nil, passphrase: passphraseLive) else { return nil }
            let factors: Set<AuthenticationFactor> =
                if proof != nil && policy.satisfied(biometry: true, passphrase: false) {
                    [.biometry]
                } else if passphraseLive && policy.satisfied(biometry: false, passphrase: true) {
                    [.passphrase]
                } else {
                    [.biometry, .passphrase]
                }
            session.lastActivity = now.monotonic
            state.session = session
            let usedPrint = factors.contains(.biometry) ? proof?.printID : nil
            return Grant(
                action: operation.auditKind, itemName: item.name, factors: factors,
                matchedPrint: usedPrint, reusedSession: true, decidedAt: now,
                reason: reason("reused session (\(factors.map(\.rawValue).sorted().joined(separator: "+")))"))
        }, recording: { grant in
            grant.map { [event(operation.auditKind, at: now, subject: item.name, outcome: .success, reason: $0.reason)] } ?? []
        })
    }

    /// Adds this attempt's fresh proofs to the session (starting one if needed), and records
    /// `record` (the decision) in the same transaction: one commit a decision.
    func refreshSession(with attempt: Attempt, at now: ClockReading,
                        recording record: PolicyAuditEvent? = nil) throws(AuthorizationError) {
        guard attempt.matchedPrint != nil || attempt.passphraseVerified else {
            if let record { try emit(record) }
            return
        }
        let enrollmentState = attempt.enrollment?.state
        try withState(at: now, { state in
            var session = state.session ?? SessionState(lastActivity: now.monotonic)
            if let print = attempt.matchedPrint, let enrollmentState {
                session.biometry = BiometricProof(
                    matchedAt: now.monotonic, printID: print, enrollmentState: enrollmentState)
            }
            if attempt.passphraseVerified {
                session.passphraseVerifiedAt = now.monotonic
            }
            session.lastActivity = now.monotonic
            state.session = session
        }, recording: { _ in record.map { [$0] } ?? [] })
    }
}
