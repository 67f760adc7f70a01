import FoundationEssentials
public import TouchgateBasics

extension Vault {
    /// Stores `value` under `name`, replacing any item of that name (which keeps its id
    /// and creation date but gets a new item key and nonce, hence a new ``VaultItemInfo/version``).
    ///
    /// One `BEGIN IMMEDIATE` transaction; to write the item together with its audit record,
    /// use ``StoreTransaction/setItem(named:value:policy:freshTouch:enrollmentDigest:key:expecting:in:)``.
    /// - Parameters:
    ///   - policy: the access-control policy, stored as given and authenticated.
    ///   - freshTouch: whether release needs a fresh touch; authenticated.
    ///   - enrollmentDigest: the enrollment state to bind to (``destroyKeys(currentEnrollmentDigest:)``
    ///     destroys the item when it changes), or `nil` for an unbound item.
    ///   - key: the vault key.
    ///   - expecting: what must be stored now: anything (the default), no such item, or
    ///     the version read earlier.
    /// - Returns: the item's new version.
    /// - Throws: ``VaultError/invalidArgument(_:)`` for an empty name,
    ///   ``ConflictError/itemChanged(name:)`` when `expecting` does not hold (nothing is
    ///   written), ``VaultError/notInitialized(directory:)``, ``StoreError``.
    @discardableResult
    public func setItem(named name: String, value: SecretBytes, kind: ItemKind = .secret, policy: String, freshTouch: Bool,
                        enrollmentDigest: [UInt8]?, details: String? = nil, key: VaultKey,
                        expecting: ItemExpectation = .any) throws -> ItemVersion {
        check(key)
        guard !name.isEmpty else { throw VaultError.invalidArgument("an item needs a name") }
        return try AuditLog.opened(in: database).atomically { transaction in
            try transaction.setItem(named: name, value: value, kind: kind, policy: policy, freshTouch: freshTouch,
                                    enrollmentDigest: enrollmentDigest, details: details, key: key,
                                    expecting: expecting, in: self)
        }
    }

    /// The write itself, inside the caller's transaction.
    func setItem(_ db: Database, named name: String, value: SecretBytes, kind: ItemKind, policy: String, freshTouch: Bool,
                 enrollmentDigest: [UInt8]?, details: String?, key: VaultKey, expecting: ItemExpectation) throws -> ItemVersion {
        check(key)
        guard !name.isEmpty else { throw VaultError.invalidArgument("an item needs a name") }
        try requireSameVault(db)
        let existing = try Row.fetchOne(db, sql: "SELECT id, created_at, nonce FROM vault_item WHERE owner = ? AND name = ?",
                                        arguments: [owner, name])
        try expecting.check(current: existing.map { Self.nonce(of: $0) }, name: name)
        let id: String = existing?["id"] ?? UUID().uuidString.lowercased()
        let now = Date().timeIntervalSince1970
        let createdAt: Double = existing?["created_at"] ?? now
        let bound = ItemBinding(id: id, owner: owner, name: name, kind: kind, policy: policy,
                                freshTouch: freshTouch, enrollmentDigest: enrollmentDigest, details: details)
        let itemKey = SecretBytes.random(count: SecretBox.keyBytes)
        let wrappedKey = SecretBox.wrap(itemKey, under: key.bytes, associatedData: bound.keyAssociatedData)
        let sealed = SecretBox.seal(value, key: itemKey, associatedData: bound.valueAssociatedData)
        try db.execute(sql: """
            INSERT INTO vault_item (id, owner, name, kind, policy, fresh_touch, enrollment_digest, wrapped_key,
                                    nonce, ciphertext, created_at, updated_at, details)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET
                kind = excluded.kind, policy = excluded.policy, fresh_touch = excluded.fresh_touch,
                enrollment_digest = excluded.enrollment_digest, wrapped_key = excluded.wrapped_key,
                nonce = excluded.nonce, ciphertext = excluded.ciphertext, updated_at = excluded.updated_at,
                details = excluded.details
            """, arguments: [id, owner, name, kind.rawValue, policy, freshTouch, enrollmentDigest.map { Data($0) },
                             Data(wrappedKey), Data(sealed.nonce), Data(sealed.ciphertext), createdAt, now, details])
        return ItemVersion(bytes: sealed.nonce)
    }

    /// The stored nonce of an item row (empty when a hand edit gave it another type).
    private static func nonce(of row: Row) -> [UInt8] {
        if case let .blob(nonce) = (row["nonce"] as DatabaseValue) { return Array(nonce) }
        return []
    }

    /// Inside a transaction: the vault row is there and is still this handle's vault.
    func requireSameVault(_ db: Database) throws {
        guard let meta = try MetaRecord.fetch(db) else { throw VaultError.notInitialized(directory: directory) }
        // The vault was deleted and created again under this handle: a new vault.
        guard meta.vaultID == vaultID else { throw VaultError.locked }
    }

    /// Decrypts the item `name`.
    ///
    /// The caller (the policy core) decides whether it may be released; this only opens it.
    /// - Throws: ``VaultError/itemNotFound(name:)``; ``VaultError/itemInvalidated(name:)``
    ///   when an enrollment change destroyed its key; ``VaultError/integrity(what:)`` when
    ///   its ciphertext, nonce, wrapped key or any authenticated column was altered.
    public func item(named name: String, key: VaultKey) throws -> VaultItem {
        let (row, info, bound, itemKey) = try unwrapped(named: name, key: key)
        let nonce: Data = row["nonce"], ciphertext: Data = row["ciphertext"]
        guard let value = SecretBox.open(nonce: Array(nonce), ciphertext: Array(ciphertext), key: itemKey,
                                         associatedData: bound.valueAssociatedData) else {
            throw VaultError.integrity(what: "item \"\(name)\"")
        }
        return VaultItem(info: info, value: value)
    }

    /// The row of item `name`, what it says, its binding and its key unwrapped under `key`
    /// (which vouches for every authenticated column).
    private func unwrapped(named name: String, key: VaultKey) throws -> (Row, VaultItemInfo, ItemBinding, SecretBytes) {
        check(key)
        let owner = self.owner
        // The row is read in the transaction that checks it against the audit head: an
        // older copy of it (an earlier value, a looser policy, a deleted item) is refused.
        let log = try AuditLog.opened(in: database)
        guard let row = try database.writer.read({ db in
            _ = try log.requireAuthenticState(db)
            return try Row.fetchOne(db, sql: "SELECT * FROM vault_item WHERE owner = ? AND name = ?",
                                    arguments: [owner, name])
        }) else {
            throw VaultError.itemNotFound(name: name)
        }
        let info = Self.info(from: row)
        guard let wrapped = row["wrapped_key"] as Data? else { throw VaultError.itemInvalidated(name: name) }
        let bound = ItemBinding(id: row["id"], owner: info.owner, name: info.name, kind: info.kind, policy: info.policy,
                                freshTouch: info.freshTouch, enrollmentDigest: info.enrollmentDigest, details: info.details)
        guard let itemKey = SecretBox.unwrap(Array(wrapped), under: key.bytes, associatedData: bound.keyAssociatedData) else {
            throw VaultError.integrity(what: "item \"\(name)\"")
        }
        return (row, info, bound, itemKey)
    }

    /// The item `name` as stored, once its authenticated columns check out under `key` (its
    /// wrapped key opens with them), without decrypting its value: what a decision about it
    /// may trust before the release is granted.
    /// - Throws: as ``item(named:key:)``.
    public func authenticatedInfo(named name: String, key: VaultKey) throws -> VaultItemInfo {
        try unwrapped(named: name, key: key).1
    }

    /// Deletes the item `name` (no key needed); returns whether it existed.
    ///
    /// With `expecting` other than `.any`, deletes only if the item is still what was
    /// read (``ConflictError/itemChanged(name:)`` otherwise, nothing deleted).
    @discardableResult
    public func deleteItem(named name: String, expecting: ItemExpectation = .any) throws -> Bool {
        try AuditLog.opened(in: database).atomically { transaction in
            try transaction.deleteItem(named: name, expecting: expecting, in: self)
        }
    }

    /// The deletion itself, inside the caller's transaction.
    func deleteItem(_ db: Database, named name: String, expecting: ItemExpectation) throws -> Bool {
        let current = try Row.fetchOne(db, sql: "SELECT nonce FROM vault_item WHERE owner = ? AND name = ?",
                                       arguments: [owner, name])
        try expecting.check(current: current.map { Self.nonce(of: $0) }, name: name)
        try db.execute(sql: "PRAGMA secure_delete = ON")
        try db.execute(sql: "DELETE FROM vault_item WHERE owner = ? AND name = ?", arguments: [owner, name])
        return db.changesCount > 0
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
        try AuditLog.opened(in: database).atomically { transaction in
            try transaction.destroyKeys(currentEnrollmentDigest: currentEnrollmentDigest, in: self)
        }
    }

    /// The destruction itself, inside the caller's transaction.
    static func destroyKeys(_ db: Database, currentEnrollmentDigest: [UInt8]) throws -> [String] {
        let digest = Data(currentEnrollmentDigest)
        try db.execute(sql: "PRAGMA secure_delete = ON")
        let condition = "enrollment_digest IS NOT NULL AND enrollment_digest != ? AND wrapped_key IS NOT NULL"
        let names = try String.fetchAll(db, sql: "SELECT name FROM vault_item WHERE \(condition) ORDER BY name",
                                        arguments: [digest])
        try db.execute(sql: "UPDATE vault_item SET wrapped_key = NULL, updated_at = ? WHERE \(condition)",
                       arguments: [Date().timeIntervalSince1970, digest])
        return names
    }

    /// The owner's item `name` as a listing shows it (with its version), or `nil`.
    public func itemInfo(named name: String) throws -> VaultItemInfo? {
        try database.writer.read { db in try itemInfo(db, named: name) }
    }

    /// The listing entry, inside the caller's transaction.
    func itemInfo(_ db: Database, named name: String) throws -> VaultItemInfo? {
        try Row.fetchOne(db, sql: "SELECT * FROM vault_item WHERE owner = ? AND name = ?", arguments: [owner, name])
            .map(Self.info(from:))
    }

    private static func info(from row: Row) -> VaultItemInfo {
        let digest: Data? = row["enrollment_digest"]
        let wrapped: Data? = row["wrapped_key"]
        var info = VaultItemInfo(name: row["name"], owner: row["owner"], policy: row["policy"],
                                 freshTouch: row["fresh_touch"], enrollmentDigest: digest.map(Array.init),
                                 isInvalidated: wrapped == nil,
                                 createdAt: Date(timeIntervalSince1970: row["created_at"]),
                                 updatedAt: Date(timeIntervalSince1970: row["updated_at"]))
        // An unknown kind (a hand edit) reads as a key, so it is never released; its seal,
        // bound to the kind it was stored with, then fails to open anyway.
        info.kind = ItemKind(rawValue: row["kind"]) ?? .sshKey
        info.details = row["details"]
        info.version = ItemVersion(bytes: nonce(of: row))
        return info
    }
}

/// The columns an item's seals are bound to: changing any of them in the database
/// makes its wrapped key and its value fail to open.
struct ItemBinding {
    var id: String
    var owner: String
    var name: String
    var kind: ItemKind
    var policy: String
    var freshTouch: Bool
    var enrollmentDigest: [UInt8]?
    /// The Secret Service's JSON (``VaultItemInfo/details``), bound only when set.
    var details: String?

    private func associatedData(domain: String) -> [UInt8] {
        var ad = AssociatedData(domain: domain)
        ad.append(id)
        ad.append(owner)
        ad.append(name)
        ad.append(policy)
        ad.append(freshTouch)
        ad.append(optional: enrollmentDigest)
        // Items stored before kinds existed are secrets, and their seals stay as they were.
        if kind != .secret { ad.append(kind.rawValue) }
        // Likewise items stored before details existed, and every item without them.
        if let details {
            ad.append("details")
            ad.append(details)
        }
        return ad.bytes
    }

    /// For the item key wrapped under the vault key.
    var keyAssociatedData: [UInt8] { associatedData(domain: "touchgate/item-key/v1") }
    /// For the value sealed under the item key.
    var valueAssociatedData: [UInt8] { associatedData(domain: "touchgate/item-value/v1") }
}
