import Synchronization
public import TouchgatePolicy

/// An ``AuditSink`` that keeps events in memory, for tests and diagnostics.
public final class RecordingAuditSink: AuditSink, Sendable {
    // The events recorded, read and written only under their lock.
    private let stored = Mutex<[PolicyAuditEvent]>([])

    /// Creates an empty recorder.
    public init() {}

    /// Appends the event.
    public func record(_ event: PolicyAuditEvent) {
        stored.withLock { $0.append(event) }
    }

    /// Everything recorded so far, in order.
    public var events: [PolicyAuditEvent] { stored.withLock { $0 } }
}
