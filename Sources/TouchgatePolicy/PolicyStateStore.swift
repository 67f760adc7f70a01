/// Persistent storage of ``PolicyState`` shared by every process using the vault.
///
/// ``update(_:)`` is an atomic read-modify-write: the store reads the state, runs `body`
/// on it and writes the result back in one transaction (the vault: one SQLite
/// `BEGIN IMMEDIATE` transaction), so concurrent attempts from several processes are all
/// counted. `body` is synchronous, short, and may run more than once if the store
/// retries a conflicting transaction; it must not block or await. If `body` throws, the
/// store must discard its changes and rethrow.
public protocol PolicyStateStore: Sendable {
    /// Runs `body` on the stored state inside one transaction and saves the result.
    /// - Throws: whatever `body` throws, or the store's own error (the evaluator reports
    ///   it as ``AuthorizationError/stateUnavailable(_:)`` and denies access).
    func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T

    /// ``update(_:)``, then `record` with `body`'s result, in the same transaction where
    /// the store can: `record` is given a sink that writes inside it, so a decision's state
    /// change and its audit records commit together (one durable commit, never one without
    /// the other), and if `record` throws nothing is saved. A store without such a sink
    /// passes nil, and `record` uses the evaluator's own sink after the state is saved.
    func update<T>(_ body: (inout PolicyState) throws -> T,
                   thenRecord record: (T, (any AuditSink)?) throws -> Void) throws -> T

    /// The stored state, changing nothing. A store that can read without taking the write
    /// lock (the vault: a read transaction) should: `status` reads on every request.
    func read() throws -> PolicyState
}

/// The name the design discussion used for ``PolicyStateStore``.
public typealias LockoutStore = PolicyStateStore

extension PolicyStateStore {
    /// The state saved first, then `record` told to use its own sink.
    public func update<T>(_ body: (inout PolicyState) throws -> T,
                          thenRecord record: (T, (any AuditSink)?) throws -> Void) throws -> T {
        let result = try update(body)
        try record(result, nil)
        return result
    }

    /// Reads the current state through ``update(_:)``, changing nothing.
    public func read() throws -> PolicyState {
        try update { $0 }
    }
}
