import Foundation
import TouchgatePolicy
import TouchgateVault

/// The policy core's state (failure counters, lockout, reuse session, passphrase entry)
/// kept as one JSON value in the vault's authenticated state table.
///
/// Each ``update(_:)`` is one `BEGIN IMMEDIATE` transaction (``StateStore/updateState(_:_:)``),
/// so attempts made at the same time by several processes are all counted. A value that
/// no longer decodes, or state edited outside touchgate, throws, and the evaluator then
/// denies access (fail closed).
struct VaultPolicyStateStore: PolicyStateStore {
    /// The state-table key.
    static let stateKey = "policy.state"

    let store: StateStore

    func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T {
        try store.updateState(Self.stateKey) { data in
            var state = try data.map { try JSONDecoder().decode(PolicyState.self, from: $0) } ?? PolicyState()
            let result = try body(&state)
            data = try JSONEncoder().encode(state)
            return result
        }
    }
}
