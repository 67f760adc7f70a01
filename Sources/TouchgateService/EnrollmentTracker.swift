import CSodium
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault

/// The enrolled set as the policy core sees it: a digest over a change counter and the
/// identifiers of every stored print, which changes on every enroll and delete.
///
/// The counter lives in the authenticated state and is bumped with each change, so
/// replacing a finger (same identifier) still changes the digest. Items bound to the old
/// digest (`biometry-current-set`) have their keys destroyed in the same transaction.
enum EnrollmentTracker {
    /// The state key of the change counter.
    static let generationKey = "enrollment.generation"

    /// The policy core's name for a stored print: `user:finger@driver:device-id`.
    static func printID(_ print: StoredPrint) -> EnrolledPrintID {
        EnrolledPrintID("\(print.user):\(print.finger)@\(print.driver):\(print.deviceID)")
    }

    /// The finger a print's name (``printID(_:)``, or fprintd's) names.
    static func finger(in id: EnrolledPrintID) -> String? {
        let text = id.rawValue
        guard let at = text.firstIndex(of: "@"), let colon = text[..<at].firstIndex(of: ":") else { return nil }
        return String(text[text.index(after: colon)..<at])
    }

    /// What is enrolled now (no template is read, so this works while the vault is locked),
    /// reading the generation through the request's already open, authenticated state.
    static func status(_ guarded: PolicyGuard) throws -> EnrollmentStatus {
        let prints = try PrintStore(database: guarded.audit.database, sealing: TemplatesWithheld()).prints()
        let generation = try guarded.stateStore.state(generationKey).map(decode) ?? 0
        return status(prints: prints, generation: generation)
    }

    private static func status(prints: [StoredPrint], generation: UInt64) -> EnrollmentStatus {
        let state = EnrollmentState(generation: generation, printIDs: prints.map(printID), hash: blake2b)
        return EnrollmentStatus(state: state, printCount: prints.count)
    }

    /// Records an enroll or delete made in `transaction`: bumps the counter, destroys the
    /// keys of items bound to the old set, and (with a vault) has the policy core end the
    /// fingerprint session and record the change, and records each item lost. All of it
    /// commits with the print change itself, or none of it does.
    /// - Returns: the names of the items invalidated now.
    @discardableResult
    static func recordChange(_ change: EnrollmentChange, print: EnrolledPrintID, in transaction: StoreTransaction,
                             store: StoreAccess, context: VaultContext?) throws -> [String] {
        let generation = try transaction.updateState(generationKey) { data in
            let next = (data.map(decode) ?? 0) &+ 1
            data = encode(next)
            return next
        }
        guard let context else { return [] }
        let prints = try transaction.prints(in: store.printIndex())
        let status = status(prints: prints, generation: generation)
        let invalidated = try transaction.destroyKeys(currentEnrollmentDigest: status.state.digest, in: context.vault)
        try context.guarded.evaluator(in: transaction).recordEnrollmentChange(change, print: print, newState: status.state)
        for name in invalidated {
            try transaction.append(.itemDelete, .success, vaultUser: context.vault.owner, item: name,
                                   reason: "key destroyed: the enrolled fingers changed (biometry-current-set)")
        }
        return invalidated
    }

    private static func decode(_ data: Data) -> UInt64 {
        data.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    private static func encode(_ value: UInt64) -> Data {
        Data((0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) })
    }

    /// BLAKE2b-256 of `message`.
    static func blake2b(_ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        _ = crypto_generichash(&digest, digest.count, message, UInt64(message.count), nil, 0)
        return digest
    }
}
