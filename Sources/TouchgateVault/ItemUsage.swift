
/// How much one owner stores: what a quota counts.
public struct ItemUsage: Sendable, Equatable {
    /// The owner's items, invalidated ones included (they still take room until replaced or removed).
    public let items: Int
    /// Every byte their item rows hold (``storedBytes(value:name:policy:details:)`` of each).
    public let storedBytes: Int

    /// A usage of `items` items holding `storedBytes` bytes.
    public init(items: Int, storedBytes: Int) {
        self.items = items
        self.storedBytes = storedBytes
    }

    /// What each item is counted for besides the bytes its owner chose: its id, key wrapping,
    /// nonce, authentication tag, enrollment digest, kind, owner and times, and the entries of
    /// the two indexes that find it (by id, and by owner and name). Every one is bounded: the
    /// largest is under 200 bytes.
    public static let bytesPerItem = 256

    /// The bytes an item of `value` bytes named `name` with `policy` and `details` (the Secret
    /// Service's collection, label, attributes, content type and allowed programs, as stored)
    /// is counted for: the four as stored in UTF-8 (the name twice: its row and its index
    /// entry), and ``bytesPerItem``.
    public static func storedBytes(value: Int, name: String, policy: String, details: String?) -> Int {
        value + 2 * name.utf8.count + policy.utf8.count + (details?.utf8.count ?? 0) + bytesPerItem
    }
}

extension Vault {
    /// The owner's usage inside the caller's transaction (counting what it has written so
    /// far), leaving out the item named `excluded`. The same sum as
    /// ``ItemUsage/storedBytes(value:name:policy:details:)``, in bytes (`CAST AS BLOB`: SQLite's
    /// `length` of text counts characters).
    func usage(_ db: Database, excluding excluded: String?) throws -> ItemUsage {
        let row = try Row.fetchOne(db, sql: """
            SELECT count(*) AS items,
                   coalesce(sum(max(length(ciphertext) - 16, 0) + 2 * length(CAST(name AS BLOB))
                                + length(CAST(policy AS BLOB)) + coalesce(length(CAST(details AS BLOB)), 0)), 0)
                       + count(*) * ? AS bytes
            FROM vault_item WHERE owner = ? AND name IS NOT ?
            """, arguments: [ItemUsage.bytesPerItem, owner, excluded])
        return ItemUsage(items: row?["items"] ?? 0, storedBytes: row?["bytes"] ?? 0)
    }
}
