import FoundationEssentials
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
        /// The store, and whose vault the records of a decision name.
        case store(StateStore, vaultUser: String?)
        case transaction(TransactionHandle)
    }

    private let backing: Backing

    /// The state in its own transactions; a decision's records (``update(_:thenRecord:)``)
    /// go in the same transaction, naming `vaultUser`'s vault.
    init(store: StateStore, vaultUser: String? = nil) {
        backing = .store(store, vaultUser: vaultUser)
    }

    /// The state inside a running transaction.
    init(transaction: TransactionHandle) {
        backing = .transaction(transaction)
    }

    func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T {
        switch backing {
        case .store(let store, _): return try store.updateState(Self.stateKey, { try Self.change(&$0, body) })
        case .transaction(let transaction): return try transaction.handle.updateState(Self.stateKey, { try Self.change(&$0, body) })
        }
    }

    func update<T>(_ body: (inout PolicyState) throws -> T, thenRecord record: (T, (any AuditSink)?) throws -> Void) throws -> T {
        switch backing {
        case .store(let store, let vaultUser):
            return try store.updateState(Self.stateKey, { try Self.change(&$0, body) }) { transaction, result in
                try record(result, VaultAuditSink(transaction: TransactionHandle(handle: transaction), vaultUser: vaultUser))
            }
        case .transaction(let transaction):
            // The caller's transaction: the evaluator's own sink already writes inside it.
            let result = try transaction.handle.updateState(Self.stateKey, { try Self.change(&$0, body) })
            try record(result, nil)
            return result
        }
    }

    /// The stored state, in a read transaction of its own (no write lock) when not inside
    /// the caller's transaction; checked as every update checks it.
    func read() throws -> PolicyState {
        switch backing {
        case .store(let store, _):
            return try store.state(Self.stateKey).map { try JSONDecoder().decode(PolicyState.self, from: $0) } ?? PolicyState()
        case .transaction(let transaction):
            return try transaction.handle.updateState(Self.stateKey, { data in
                try data.map { try JSONDecoder().decode(PolicyState.self, from: $0) } ?? PolicyState()
            })
        }
    }

    /// Runs `body` on the state the stored bytes hold and writes it back into them.
    private static func change<T>(_ data: inout Data?, _ body: (inout PolicyState) throws -> T) throws -> T {
        let stored = try data.map { try JSONDecoder().decode(PolicyState.self, from: $0) }
        var state = stored ?? PolicyState()
        let result = try body(&state)
        // A state the body left as it was is not encoded again (its bytes could differ), so
        // the store writes nothing and the check costs no durable commit.
        if state != stored { data = try JSONEncoder().encode(state) }
        return result
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
