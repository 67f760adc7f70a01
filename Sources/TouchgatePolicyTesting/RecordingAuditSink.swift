import Foundation
public import TouchgatePolicy

/// An ``AuditSink`` that keeps events in memory, for tests and diagnostics.
public final class RecordingAuditSink: AuditSink, @unchecked Sendable {
    // @unchecked Sendable: `stored` is read and written only under `lock`.
    private let lock = NSLock()
    private var stored: [PolicyAuditEvent] = []

    /// Creates an empty recorder.
    public init() {}

    /// Appends the event.
    public func record(_ event: PolicyAuditEvent) {
        lock.withLock { stored.append(event) }
    }

    /// Everything recorded so far, in order.
    public var events: [PolicyAuditEvent] { lock.withLock { stored } }
}
