
/// How much one owner stores: what a quota counts.
public struct ItemUsage: Sendable, Equatable {
    /// The owner's items, invalidated ones included (they still take room until replaced or removed).
    public let items: Int
    /// The bytes of their values (each sealed value less its 16-byte authentication tag).
    public let valueBytes: Int

    /// A usage of `items` items holding `valueBytes` bytes.
    public init(items: Int, valueBytes: Int) {
        self.items = items
        self.valueBytes = valueBytes
    }
}

extension Vault {
    /// The owner's usage, leaving out the item named `excluded` (the one being replaced),
    /// inside the caller's transaction.
    func usage(_ db: Database, excluding excluded: String?) throws -> ItemUsage {
        let row = try Row.fetchOne(db, sql: """
            SELECT count(*) AS items, coalesce(sum(max(length(ciphertext) - 16, 0)), 0) AS bytes
            FROM vault_item WHERE owner = ? AND name IS NOT ?
            """, arguments: [owner, excluded])
        return ItemUsage(items: row?["items"] ?? 0, valueBytes: row?["bytes"] ?? 0)
    }
}
