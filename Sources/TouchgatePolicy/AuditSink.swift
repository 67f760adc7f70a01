import FoundationEssentials

/// Where the evaluator sends audit events, in order, as decisions are made.
///
/// The vault implements it by appending to its hash-chained log. If `record` throws,
/// the evaluator denies the operation with ``AuthorizationError/stateUnavailable(_:)``
/// (no access without an audit record). Called synchronously from the evaluating task.
public protocol AuditSink: Sendable {
    /// Records one event.
    func record(_ event: PolicyAuditEvent) throws
}

/// An ``AuditSink`` that calls a closure.
public struct ClosureAuditSink: AuditSink {
    private let body: @Sendable (PolicyAuditEvent) throws -> Void

    /// Wraps `body`, called once per event.
    public init(_ body: @escaping @Sendable (PolicyAuditEvent) throws -> Void) {
        self.body = body
    }

    /// Passes the event to the closure.
    public func record(_ event: PolicyAuditEvent) throws {
        try body(event)
    }
}

/// An ``AuditSink`` that drops every event (for callers that audit elsewhere).
public struct DiscardingAuditSink: AuditSink {
    /// Creates the sink.
    public init() {}

    /// Does nothing.
    public func record(_ event: PolicyAuditEvent) {}
}
