// Store transactions and audit emission: the two places the evaluator touches the world.

extension AccessEvaluator {
    /// Runs `body` in one store transaction after applying what time alone changed, and
    /// audits those changes, then the events `recording` makes of `body`'s result: in that
    /// same transaction when the store offers a sink inside it (one commit for a decision
    /// and its records). Store failures become ``AuthorizationError/stateUnavailable(_:)``.
    func withState<T>(at now: ClockReading, _ body: (inout PolicyState) -> T,
                      recording events: (T) -> [PolicyAuditEvent] = { _ in [] }) throws(AuthorizationError) -> T {
        let configuration = configuration
        var transitions: [StateTransition] = []
        do {
            return try store.update({ state in
                transitions = state.normalize(at: now.monotonic, configuration: configuration)
                return body(&state)
            }, thenRecord: { result, sink in
                for event in transitionEvents(transitions, at: now) + events(result) {
                    try emit(event, to: sink ?? auditSink)
                }
            })
        } catch let error as AuthorizationError {
            throw error
        } catch {
            throw .stateUnavailable(String(describing: error))
        }
    }

    /// The audit events of what time alone changed.
    private func transitionEvents(_ transitions: [StateTransition], at now: ClockReading) -> [PolicyAuditEvent] {
        transitions.map { transition in
            switch transition {
            case .lockoutExpired:
                event(.lockoutEnded, at: now, outcome: .success, reason: "lockout expired")
            case .lockoutRestartedAfterReboot:
                event(.lockoutStarted, at: now, outcome: .success,
                      reason: "lockout from an earlier boot restarted with its full duration")
            case .sessionEnded(let why):
                event(.sessionEnded, at: now, outcome: .success, reason: why)
            }
        }
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

    /// Sends an event to the sink (or `sink`); a sink failure denies the operation.
    func emit(_ event: PolicyAuditEvent, to sink: (any AuditSink)? = nil) throws(AuthorizationError) {
        do {
            try (sink ?? auditSink).record(event)
        } catch {
            throw .stateUnavailable("audit log: \(error)")
        }
    }
}
