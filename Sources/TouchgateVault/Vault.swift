import CSodium
import Foundation
import GRDB

/// The encrypted store: a passphrase-protected vault key, per-item keys, sealed items and templates.
///
/// Key hierarchy: passphrase → Argon2id (``KDFParameters``, salt and parameters stored
/// in `vault_meta`) → key-encryption key → wraps a random vault key → wraps a random
/// key per item and derives the template key. Everything is XChaCha20-Poly1305 with a
/// random nonce per seal.
///
/// A `Vault` value is a handle on the database plus the vault user (``owner``); it
/// holds no key. Operations that need the key take a ``VaultKey`` (from
/// ``unlock(passphrase:)`` or ``VaultSession/currentKey()``). Thread-safe: all state
/// is in the database; writes are serialized by SQLite.
public struct Vault: Sendable {
    /// The database holding the vault.
    public let database: TouchgateDatabase
    /// The vault user: items are stored under and authenticated with this name.
    public let owner: String
    /// The random id chosen when the vault was created.
    let vaultID: [UInt8]

    /// Length of the random vault id.
    static let idBytes = 16
    /// Version of the on-disk format written by this code.
    static let format = 1

    private init(database: TouchgateDatabase, owner: String, vaultID: [UInt8]) {
        self.database = database
        self.owner = owner
        self.vaultID = vaultID
    }

    /// The login name of the effective user, the default ``owner``.
    public static var currentUser: String {
        NSUserName()
    }

    /// The vault's data directory, for messages.
    var directory: String { database.location.directory.path }

    // MARK: Creating and opening

    /// Whether a vault has been created in `database`.
    public static func exists(in database: TouchgateDatabase) throws -> Bool {
        try database.writer.read { db in try MetaRecord.fetch(db) != nil }
    }

    /// Creates the vault: a random vault key wrapped under `passphrase`, and every print
    /// template already stored in plaintext sealed under it, all in one transaction.
    ///
    /// Runs Argon2id once (about a second with ``KDFParameters/moderate``).
    /// - Throws: ``VaultError/alreadyInitialized(directory:)`` if a vault exists (nothing
    ///   is changed), ``VaultError/invalidArgument(_:)`` for an empty passphrase,
    ///   ``VaultError/keyDerivationFailed(parameters:)``, or ``StoreError``.
    @discardableResult
    public static func create(database: TouchgateDatabase, passphrase: SecureBytes,
                              kdf: KDFParameters = .default, owner: String = Vault.currentUser) throws -> Vault {
        guard passphrase.count > 0 else { throw VaultError.invalidArgument("the passphrase must not be empty") }
        guard kdf.isAcceptable else {
            throw VaultError.invalidArgument("unsupported key-derivation parameters \(kdf)")
        }
        let directory = database.location.directory.path
        // Fail fast before the slow derivation; checked again inside the transaction.
        if try exists(in: database) { throw VaultError.alreadyInitialized(directory: directory) }

        let vaultID = Sodium.randomBytes(count: idBytes)
        let salt = Sodium.randomBytes(count: Int(crypto_pwhash_saltbytes()))
        let kek = try kdf.deriveKey(passphrase: passphrase, salt: salt)
        let key = VaultKey(bytes: SecureBytes.random(count: SecretBox.keyBytes), vaultID: vaultID)
        let now = Date().timeIntervalSince1970
        let meta = MetaRecord(vaultID: vaultID, kdf: kdf, salt: salt, wrappedKey: [], templatesSealed: false)
        let wrapped = SecretBox.wrap(key.bytes, under: kek, associatedData: meta.associatedData)
        try database.writer.write { db in
            if try MetaRecord.fetch(db) != nil { throw VaultError.alreadyInitialized(directory: directory) }
            try db.execute(sql: """
                INSERT INTO vault_meta (id, format, vault_id, kdf_algorithm, kdf_opslimit, kdf_memlimit,
                                        kdf_salt, wrapped_vault_key, templates_sealed, created_at, passphrase_changed_at)
                VALUES (1, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                """, arguments: [format, Data(vaultID), Int(kdf.algorithm), Int64(kdf.opsLimit), Int64(kdf.memLimit),
                                 Data(salt), Data(wrapped), now, now])
            try sealPlaintextTemplates(db, key: key)
        }
        return Vault(database: database, owner: owner, vaultID: vaultID)
    }

    /// Opens the vault in `database` (no key involved: see ``unlock(passphrase:)``).
    /// - Throws: ``VaultError/notInitialized(directory:)`` when there is none.
    public static func open(database: TouchgateDatabase, owner: String = Vault.currentUser) throws -> Vault {
        guard let meta = try database.writer.read({ db in try MetaRecord.fetch(db) }) else {
            throw VaultError.notInitialized(directory: database.location.directory.path)
        }
        return Vault(database: database, owner: owner, vaultID: meta.vaultID)
    }

    // MARK: Passphrase

    /// Checks `passphrase` and returns the vault key. (When the passphrase was last entered
    /// is the policy core's to record: `PolicyState.lastPassphraseEntry`.)
    ///
    /// Runs Argon2id with the stored parameters, then opens the wrapped vault key: that
    /// AEAD open is the only check. A wrong passphrase, an altered salt, parameters or
    /// wrapped key all give the same ``VaultError/wrongPassphrase`` after the same work.
    public func unlock(passphrase: SecureBytes) throws -> VaultKey {
        let meta = try currentMeta()
        return try Self.openVaultKey(meta, passphrase: passphrase)
    }

    /// Replaces the passphrase: re-wraps the vault key under a key derived from `new`
    /// with a fresh salt (and `kdf`, or the current parameters). Items, templates and an
    /// unlocked session are untouched; `old` stops working.
    /// - Throws: ``VaultError/wrongPassphrase`` when `old` is wrong (or the passphrase was
    ///   changed meanwhile by another process), ``VaultError/invalidArgument(_:)``.
    public func changePassphrase(from old: SecureBytes, to new: SecureBytes, kdf: KDFParameters? = nil) throws {
        guard new.count > 0 else { throw VaultError.invalidArgument("the new passphrase must not be empty") }
        let meta = try currentMeta()
        let parameters = kdf ?? meta.kdf
        guard parameters.isAcceptable else {
            throw VaultError.invalidArgument("unsupported key-derivation parameters \(parameters)")
        }
        let key = try Self.openVaultKey(meta, passphrase: old)
        let salt = Sodium.randomBytes(count: Int(crypto_pwhash_saltbytes()))
        let kek = try parameters.deriveKey(passphrase: new, salt: salt)
        let next = MetaRecord(vaultID: vaultID, kdf: parameters, salt: salt, wrappedKey: [],
                              templatesSealed: meta.templatesSealed)
        let wrapped = SecretBox.wrap(key.bytes, under: kek, associatedData: next.associatedData)
        try database.writer.write { db in
            // Compare-and-swap: a concurrent change made `old` wrong; say so rather than overwrite it.
            try db.execute(sql: """
                UPDATE vault_meta SET kdf_algorithm = ?, kdf_opslimit = ?, kdf_memlimit = ?, kdf_salt = ?,
                                      wrapped_vault_key = ?, passphrase_changed_at = ?
                WHERE id = 1 AND wrapped_vault_key = ?
                """, arguments: [Int(parameters.algorithm), Int64(parameters.opsLimit), Int64(parameters.memLimit),
                                 Data(salt), Data(wrapped), Date().timeIntervalSince1970, Data(meta.wrappedKey)])
            guard db.changesCount == 1 else { throw VaultError.wrongPassphrase }
        }
    }

    /// The Argon2id parameters the passphrase is currently protected with.
    public func kdfParameters() throws -> KDFParameters {
        try currentMeta().kdf
    }

    /// The metadata row, which must still belong to this vault.
    func currentMeta() throws -> MetaRecord {
        guard let meta = try database.writer.read({ db in try MetaRecord.fetch(db) }) else {
            throw VaultError.notInitialized(directory: directory)
        }
        guard meta.vaultID == vaultID else {
            // The vault was deleted and created again under this handle: a new vault.
            throw VaultError.locked
        }
        return meta
    }

    /// Argon2id then one AEAD open; any failure is ``VaultError/wrongPassphrase``.
    private static func openVaultKey(_ meta: MetaRecord, passphrase: SecureBytes) throws -> VaultKey {
        // Out-of-range parameters can only come from an altered row: same answer as a
        // wrong passphrase, so the error says nothing about which part was wrong.
        guard meta.kdf.isAcceptable, meta.salt.count == Int(crypto_pwhash_saltbytes()) else {
            throw VaultError.wrongPassphrase
        }
        let kek = try meta.kdf.deriveKey(passphrase: passphrase, salt: meta.salt)
        guard let bytes = SecretBox.unwrap(meta.wrappedKey, under: kek, associatedData: meta.associatedData) else {
            throw VaultError.wrongPassphrase
        }
        return VaultKey(bytes: bytes, vaultID: meta.vaultID)
    }

    /// Traps when `key` belongs to another vault (a programmer error, not a user one).
    func check(_ key: VaultKey) {
        precondition(key.vaultID == vaultID, "this VaultKey belongs to another vault")
    }
}

/// The `vault_meta` row.
struct MetaRecord {
    var vaultID: [UInt8]
    var kdf: KDFParameters
    var salt: [UInt8]
    var wrappedKey: [UInt8]
    var templatesSealed: Bool

    /// Whether a vault exists (the row is there, whatever it holds).
    static func exists(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM vault_meta WHERE id = 1)") ?? false
    }

    static func fetch(_ db: Database) throws -> MetaRecord? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT vault_id, kdf_algorithm, kdf_opslimit, kdf_memlimit, kdf_salt, wrapped_vault_key, templates_sealed
            FROM vault_meta WHERE id = 1
            """) else { return nil }
        let algorithm: Int64 = row["kdf_algorithm"], ops: Int64 = row["kdf_opslimit"], mem: Int64 = row["kdf_memlimit"]
        let vaultID: Data = row["vault_id"], salt: Data = row["kdf_salt"], wrapped: Data = row["wrapped_vault_key"]
        return MetaRecord(
            vaultID: Array(vaultID),
            kdf: KDFParameters(algorithm: Int32(truncatingIfNeeded: algorithm),
                               opsLimit: UInt64(max(ops, 0)), memLimit: UInt64(max(mem, 0))),
            salt: Array(salt), wrappedKey: Array(wrapped), templatesSealed: row["templates_sealed"])
    }

    /// What the wrapped vault key is bound to: the vault id, the KDF parameters and salt.
    var associatedData: [UInt8] {
        var ad = AssociatedData(domain: "touchgate/vault-key/v1")
        ad.append(vaultID)
        ad.append(UInt64(UInt32(bitPattern: kdf.algorithm)))
        ad.append(kdf.opsLimit)
        ad.append(kdf.memLimit)
        ad.append(salt)
        return ad.bytes
    }
}
