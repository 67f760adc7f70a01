import Foundation
import TouchgatePolicy
import TouchgateVault

/// The policy core's state (failure counters, lockout, reuse session, passphrase entry)
/// kept as one JSON value in the vault's authenticated state table.
///
/// Each ``update(_:)`` is one `BEGIN IMMEDIATE` transaction (``StateStore/updateState(_:_:)``),
/// or part of the caller's transaction (``StoreTransaction/updateState(_:_:)``), so attempts
/// made at the same time by several processes are all counted. A value that no longer
/// decodes, or state edited outside touchgate, throws, and the evaluator then denies
/// access (fail closed).
struct VaultPolicyStateStore: PolicyStateStore {
    /// The state-table key.
    static let stateKey = "policy.state"

    private enum Backing {
        case store(StateStore)
        case transaction(TransactionHandle)
    }

    private let backing: Backing

    /// The state in its own transactions.
    init(store: StateStore) {
        backing = .store(store)
    }

    /// The state inside a running transaction.
    init(transaction: TransactionHandle) {
        backing = .transaction(transaction)
    }

    func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T {
        func change(_ data: inout Data?) throws -> T {
            var state = try data.map { try JSONDecoder().decode(PolicyState.self, from: $0) } ?? PolicyState()
            let result = try body(&state)
            data = try JSONEncoder().encode(state)
            return result
        }
        switch backing {
        case .store(let store): return try store.updateState(Self.stateKey, change)
        case .transaction(let transaction): return try transaction.handle.updateState(Self.stateKey, change)
        }
    }
}

/// A store transaction handed to the policy core while the transaction's body runs.
///
/// `@unchecked Sendable`: the policy core calls its state store and audit sink
/// synchronously, from the task running the body (the ``PolicyStateStore`` and
/// ``AuditSink`` contracts), and the evaluator built over it is dropped before the body
/// returns; the handle never crosses a thread or outlives the transaction.
struct TransactionHandle: @unchecked Sendable {
    let handle: StoreTransaction
}
