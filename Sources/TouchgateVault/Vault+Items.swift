import Foundation
import GRDB

extension Vault {
    /// Stores `value` under `name`, replacing any item of that name (which keeps its id
    /// and creation date but gets a new item key and nonce).
    ///
    /// - Parameters:
    ///   - policy: the access-control policy, stored as given and authenticated.
    ///   - freshTouch: whether release needs a fresh touch; authenticated.
    ///   - enrollmentDigest: the enrollment state to bind to (``destroyKeys(currentEnrollmentDigest:)``
    ///     destroys the item when it changes), or `nil` for an unbound item.
    ///   - key: the vault key.
    /// - Throws: ``VaultError/invalidArgument(_:)`` for an empty name, ``StoreError``.
    public func setItem(named name: String, value: SecureBytes, policy: String, freshTouch: Bool,
                        enrollmentDigest: [UInt8]?, key: VaultKey) throws {
        check(key)
        guard !name.isEmpty else { throw VaultError.invalidArgument("an item needs a name") }
        let owner = self.owner
        _ = try currentMeta()
        try database.writer.write { db in
            let existing = try Row.fetchOne(db, sql: "SELECT id, created_at FROM vault_item WHERE owner = ? AND name = ?",
                                            arguments: [owner, name])
            let id: String = existing?["id"] ?? UUID().uuidString.lowercased()
            let now = Date().timeIntervalSince1970
            let createdAt: Double = existing?["created_at"] ?? now
            let bound = ItemBinding(id: id, owner: owner, name: name, policy: policy,
                                    freshTouch: freshTouch, enrollmentDigest: enrollmentDigest)
            let itemKey = SecureBytes.random(count: SecretBox.keyBytes)
            let wrappedKey = SecretBox.wrap(itemKey, under: key.bytes, associatedData: bound.keyAssociatedData)
            let sealed = SecretBox.seal(value, key: itemKey, associatedData: bound.valueAssociatedData)
            try db.execute(sql: """
                INSERT INTO vault_item (id, owner, name, policy, fresh_touch, enrollment_digest, wrapped_key,
                                        nonce, ciphertext, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET
                    policy = excluded.policy, fresh_touch = excluded.fresh_touch,
                    enrollment_digest = excluded.enrollment_digest, wrapped_key = excluded.wrapped_key,
                    nonce = excluded.nonce, ciphertext = excluded.ciphertext, updated_at = excluded.updated_at
                """, arguments: [id, owner, name, policy, freshTouch, enrollmentDigest.map { Data($0) },
                                 Data(wrappedKey), Data(sealed.nonce), Data(sealed.ciphertext), createdAt, now])
        }
    }

    /// Decrypts the item `name`.
    ///
    /// The caller (the policy core) decides whether it may be released; this only opens it.
    /// - Throws: ``VaultError/itemNotFound(name:)``; ``VaultError/itemInvalidated(name:)``
    ///   when an enrollment change destroyed its key; ``VaultError/integrity(what:)`` when
    ///   its ciphertext, nonce, wrapped key or any authenticated column was altered.
    public func item(named name: String, key: VaultKey) throws -> VaultItem {
        check(key)
        let owner = self.owner
        guard let row = try database.writer.read({ db in
            try Row.fetchOne(db, sql: "SELECT * FROM vault_item WHERE owner = ? AND name = ?", arguments: [owner, name])
        }) else {
            throw VaultError.itemNotFound(name: name)
        }
        let info = Self.info(from: row)
        guard let wrapped = row["wrapped_key"] as Data? else { throw VaultError.itemInvalidated(name: name) }
        let bound = ItemBinding(id: row["id"], owner: info.owner, name: info.name, policy: info.policy,
                                freshTouch: info.freshTouch, enrollmentDigest: info.enrollmentDigest)
        let nonce: Data = row["nonce"], ciphertext: Data = row["ciphertext"]
        guard let itemKey = SecretBox.unwrap(Array(wrapped), under: key.bytes, associatedData: bound.keyAssociatedData),
              let value = SecretBox.open(nonce: Array(nonce), ciphertext: Array(ciphertext), key: itemKey,
                                         associatedData: bound.valueAssociatedData)
        else {
            throw VaultError.integrity(what: "item \"\(name)\"")
        }
        return VaultItem(info: info, value: value)
    }

    /// Deletes the item `name` (no key needed); returns whether it existed.
    @discardableResult
    public func deleteItem(named name: String) throws -> Bool {
        let owner = self.owner
        return try database.writer.write { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.execute(sql: "DELETE FROM vault_item WHERE owner = ? AND name = ?", arguments: [owner, name])
            return db.changesCount > 0
        }
    }

    /// The owner's items, by name: names, policies, bindings and dates, never values.
    public func items() throws -> [VaultItemInfo] {
        let owner = self.owner
        return try database.writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM vault_item WHERE owner = ? ORDER BY name", arguments: [owner])
                .map(Self.info(from:))
        }
    }

    /// Destroys for good the key of every item (of every owner) bound to an enrollment
    /// state other than `currentEnrollmentDigest`; unbound items are untouched.
    ///
    /// Call it whenever a finger is enrolled or deleted. The wrapped item key is set to
    /// NULL with SQLite's `secure_delete` on, so the old bytes are overwritten in the
    /// database file; reading such an item then throws ``VaultError/itemInvalidated(name:)``.
    /// No key is needed: destroying never requires the passphrase.
    /// - Returns: the names of the items invalidated now.
    @discardableResult
    public func destroyKeys(currentEnrollmentDigest: [UInt8]) throws -> [String] {
        let digest = Data(currentEnrollmentDigest)
        return try database.writer.write { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            let condition = "enrollment_digest IS NOT NULL AND enrollment_digest != ? AND wrapped_key IS NOT NULL"
            let names = try String.fetchAll(db, sql: "SELECT name FROM vault_item WHERE \(condition) ORDER BY name",
                                            arguments: [digest])
            try db.execute(sql: "UPDATE vault_item SET wrapped_key = NULL, updated_at = ? WHERE \(condition)",
                           arguments: [Date().timeIntervalSince1970, digest])
            return names
        }
    }

    private static func info(from row: Row) -> VaultItemInfo {
        let digest: Data? = row["enrollment_digest"]
        let wrapped: Data? = row["wrapped_key"]
        return VaultItemInfo(name: row["name"], owner: row["owner"], policy: row["policy"],
                             freshTouch: row["fresh_touch"], enrollmentDigest: digest.map(Array.init),
                             isInvalidated: wrapped == nil,
                             createdAt: Date(timeIntervalSince1970: row["created_at"]),
                             updatedAt: Date(timeIntervalSince1970: row["updated_at"]))
    }
}

/// The columns an item's seals are bound to: changing any of them in the database
/// makes its wrapped key and its value fail to open.
struct ItemBinding {
    var id: String
    var owner: String
    var name: String
    var policy: String
    var freshTouch: Bool
    var enrollmentDigest: [UInt8]?

    private func associatedData(domain: String) -> [UInt8] {
        var ad = AssociatedData(domain: domain)
        ad.append(id)
        ad.append(owner)
        ad.append(name)
        ad.append(policy)
        ad.append(freshTouch)
        ad.append(optional: enrollmentDigest)
        return ad.bytes
    }

    /// For the item key wrapped under the vault key.
    var keyAssociatedData: [UInt8] { associatedData(domain: "touchgate/item-key/v1") }
    /// For the value sealed under the item key.
    var valueAssociatedData: [UInt8] { associatedData(domain: "touchgate/item-value/v1") }
}
