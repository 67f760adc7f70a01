import FoundationEssentials
import TouchgateVault
import TouchgateAPI

/// How much one user may store through touchgated, which keeps every user's store on one
/// file system: without a bound, one user could fill it and take `secret get`, `verify` and
/// `unlock` away from everyone (issue 27). The personal mode has none (the user's own disk).
///
/// Every byte an item's row holds is counted (``ItemUsage/storedBytes(value:name:policy:details:)``):
/// its value, name, policy and Secret Service details (collection, label, attributes, content
/// type, allowed programs), and ``ItemUsage/bytesPerItem`` for the rest. The bound is checked
/// inside the transaction that writes, after the write (``TouchgateService/atomicallyWithinQuota(_:item:_:)``):
/// a write past it is rolled back (`quota`, exit 13), whatever door it came through (a secret,
/// an SSH key, a Secret Service item, an import, an allowed program). The refusal is audited
/// once per crossing: the first refusal writes an `item.write` `denied` record, later ones
/// write none until a store succeeds again, so refused requests cannot themselves fill the
/// disk with records.
public struct ItemQuota: Sendable, Equatable {
    /// The most items one user may keep.
    public var maximumItems: Int
    /// The most bytes their items may hold together (``ItemUsage/storedBytes``).
    public var maximumStoredBytes: Int

    /// A quota of `maximumItems` items and `maximumStoredBytes` bytes (by default 1,000
    /// items and 4 MiB: 64 values of the largest size a request may carry, or many small ones).
    public init(maximumItems: Int = 1000, maximumStoredBytes: Int = 4 << 20) {
        self.maximumItems = maximumItems
        self.maximumStoredBytes = maximumStoredBytes
    }

    /// The state key that marks a refusal already recorded (cleared by the next successful store).
    static let refusedStateKey = "quota.refused"

    /// Why a write that took the owner's usage from `before` to `after` breaks the quota, or
    /// nil when it is within it. A write that does not grow what is over the bound (a
    /// smaller replacement in a store filled before the bound was lowered) is not refused.
    func problem(before: ItemUsage, after: ItemUsage) -> String? {
        if after.items > maximumItems, after.items > before.items {
            return "you keep \(before.items) items through touchgated, the most one user may (\(maximumItems)); "
                + "nothing was stored. Remove some you no longer need (touchgate secret list, touchgate secret rm NAME) "
                + "or replace one (--replace)"
        }
        if after.storedBytes > maximumStoredBytes, after.storedBytes > before.storedBytes {
            return "storing this would bring what you keep through touchgated to \(after.storedBytes) bytes (values, "
                + "names, labels and attributes, and \(ItemUsage.bytesPerItem) for each item), over the "
                + "\(maximumStoredBytes) bytes one user may keep; nothing was stored. Remove some you no longer need "
                + "(touchgate secret list, touchgate secret rm NAME)"
        }
        return nil
    }
}

extension TouchgateService {
    /// A write past the quota, thrown out of its transaction so that it rolls back.
    private struct OverQuota: Error {
        let problem: String
        let before: ItemUsage
        let after: ItemUsage
    }

    /// Runs `write` (item writes and their records) in one transaction of `context`'s store
    /// and keeps it only when the owner's usage afterwards is within ``itemQuota``; else
    /// rolls it all back, records the refusal (once per crossing) naming `item`, and throws
    /// `quota`. Without a quota (the personal mode), simply the transaction.
    func atomicallyWithinQuota<T>(_ context: VaultContext, item name: String?,
                                  _ write: (StoreTransaction) throws -> T) throws -> T {
        guard let quota = itemQuota else { return try context.audit.atomically(write) }
        do {
            return try context.audit.atomically { transaction in
                let before = try transaction.itemUsage(in: context.vault)
                let result = try write(transaction)
                let after = try transaction.itemUsage(in: context.vault)
                if let problem = quota.problem(before: before, after: after) {
                    throw OverQuota(problem: problem, before: before, after: after)
                }
                if try transaction.state(ItemQuota.refusedStateKey) != nil {
                    // Stored within the quota again: the next refusal is a new crossing, recorded.
                    try transaction.updateState(ItemQuota.refusedStateKey) { $0 = nil }
                }
                return result
            }
        } catch let refusal as OverQuota {
            try context.audit.atomically { transaction in
                guard try transaction.state(ItemQuota.refusedStateKey) == nil else { return }
                try transaction.updateState(ItemQuota.refusedStateKey) { $0 = Data("1".utf8) }
                try transaction.append(.itemWrite, .denied, vaultUser: context.vault.owner, item: name,
                                       reason: "over the quota (\(refusal.before.items) items, \(refusal.before.storedBytes) "
                                           + "bytes, \(refusal.after.storedBytes) with this write; at most "
                                           + "\(quota.maximumItems) items, \(quota.maximumStoredBytes) bytes); further "
                                           + "refusals are not recorded until a store succeeds")
            }
            throw ServiceError(.quota, refusal.problem)
        }
    }
}
