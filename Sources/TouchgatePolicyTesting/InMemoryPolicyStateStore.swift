import Foundation
public import TouchgatePolicy

/// A ``PolicyStateStore`` held in memory: for tests, and for a single-process agent that
/// does not need state to survive a restart. Safe to share between tasks.
public final class InMemoryPolicyStateStore: PolicyStateStore, @unchecked Sendable {
    // @unchecked Sendable: `state` is read and written only while holding `lock`, and
    // `update` holds it for the whole read-modify-write.
    private let lock = NSLock()
    private var state: PolicyState

    /// Creates a store holding `initial`.
    public init(_ initial: PolicyState = PolicyState()) {
        state = initial
    }

    /// Runs `body` on a copy under the lock and keeps the copy only if `body` returns.
    public func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        var copy = state
        let result = try body(&copy)
        state = copy
        return result
    }

    /// The current state.
    public var snapshot: PolicyState {
        lock.withLock { state }
    }
}
