import TouchgateVault
import TouchgateAPI

/// How much one user may store through touchgated, which keeps every user's store on one
/// file system: without a bound, one user could fill it and take `secret get`, `verify` and
/// `unlock` away from everyone (issue 27). The personal mode has none (the user's own disk).
///
/// A store that would pass either bound is refused (`quota`, exit 13) before anything is
/// written. The refusal is audited once per crossing: the first refusal writes an
/// `item.write` `denied` record, later ones write none until a store succeeds again, so
/// refused requests cannot themselves fill the disk with records.
public struct ItemQuota: Sendable, Equatable {
    /// The most items one user may keep.
    public var maximumItems: Int
    /// The most value bytes their items may hold together.
    public var maximumValueBytes: Int

    /// A quota of `maximumItems` items and `maximumValueBytes` bytes (by default 1,000
    /// items and 4 MiB: 64 values of the largest size a request may carry, or many small ones).
    public init(maximumItems: Int = 1000, maximumValueBytes: Int = 4 << 20) {
        self.maximumItems = maximumItems
        self.maximumValueBytes = maximumValueBytes
    }

    /// The state key that marks a refusal already recorded (cleared by the next successful store).
    static let refusedStateKey = "quota.refused"

    /// Why adding an item of `bytes` value bytes to `usage` (which leaves out any item it
    /// replaces) would break the quota, or nil when it fits.
    func problem(usage: ItemUsage, adding bytes: Int) -> String? {
        if usage.items + 1 > maximumItems {
            return "you keep \(usage.items) secrets through touchgated, the most one user may (\(maximumItems)); "
                + "nothing was stored. Remove some you no longer need (touchgate secret list, touchgate secret rm NAME) "
                + "or replace one (--replace)"
        }
        let total = usage.valueBytes + bytes
        if total > maximumValueBytes {
            return "storing this value (\(bytes) bytes) would bring your secrets to \(total) bytes, over the "
                + "\(maximumValueBytes) bytes one user may keep through touchgated; nothing was stored. Remove "
                + "some you no longer need (touchgate secret list, touchgate secret rm NAME)"
        }
        return nil
    }
}
