// Store transactions and audit emission: the two places the evaluator touches the world.

extension AccessEvaluator {
    /// Runs `body` in one store transaction after applying what time alone changed, and
    /// audits those changes. Store failures become ``AuthorizationError/stateUnavailable(_:)``.
    func withState<T>(at now: ClockReading, _ body: (inout PolicyState) -> T) throws(AuthorizationError) -> T {
        let configuration = configuration
        let (result, transitions): (T, [StateTransition])
        do {
            (result, transitions) = try store.update { state in
                let transitions = state.normalize(at: now.monotonic, configuration: configuration)
                return (body(&state), transitions)
            }
        } catch {
            throw .stateUnavailable(String(describing: error))
        }
        for transition in transitions {
            switch transition {
            case .lockoutExpired:
                try emit(event(.lockoutEnded, at: now, outcome: .success, reason: "lockout expired"))
            case .lockoutRestartedAfterReboot:
                try emit(event(
                    .lockoutStarted, at: now, outcome: .success,
                    reason: "lockout from an earlier boot restarted with its full duration"))
            case .sessionEnded(let why):
                try emit(event(.sessionEnded, at: now, outcome: .success, reason: why))
            }
        }
        return result
    }

    /// Builds an audit event for this evaluator's principal.
    func event(
        _ kind: PolicyAuditEvent.Kind, at time: ClockReading, subject: String? = nil,
        factor: AuthenticationFactor? = nil, outcome: PolicyAuditEvent.Outcome, reason: String
    ) -> PolicyAuditEvent {
        PolicyAuditEvent(
            time: time, principal: principal, kind: kind, subject: subject, factor: factor,
            outcome: outcome, reason: reason)
    }

    /// Sends an event to the sink; a sink failure denies the operation.
    func emit(_ event: PolicyAuditEvent) throws(AuthorizationError) {
        do {
            try auditSink.record(event)
        } catch {
            throw .stateUnavailable("audit log: \(error)")
        }
    }
}
