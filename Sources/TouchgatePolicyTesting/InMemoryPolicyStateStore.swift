import Synchronization
public import TouchgatePolicy

/// A ``PolicyStateStore`` held in memory: for tests, and for a single-process agent that
/// does not need state to survive a restart. Safe to share between tasks.
public final class InMemoryPolicyStateStore: PolicyStateStore, Sendable {
    // The state, read and written only under its lock; `update` holds it for the whole
    // read-modify-write.
    private let state: Mutex<PolicyState>

    /// Creates a store holding `initial`.
    public init(_ initial: PolicyState = PolicyState()) {
        state = Mutex(initial)
    }

    /// Runs `body` on a copy under the lock and keeps the copy only if `body` returns.
    public func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T {
        var result: T?
        try state.withLock { state in
            var copy = state
            result = try body(&copy)
            state = copy
        }
        return result!
    }

    /// The current state.
    public var snapshot: PolicyState {
        state.withLock { $0 }
    }
}
