import CSodium
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
public import TouchgateBasics

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
    public let vaultID: [UInt8]

    /// Length of the random vault id.
    static let idBytes = 16
    /// Version of the on-disk format written by this code.
    static let format = 1

    private init(database: TouchgateDatabase, owner: String, vaultID: [UInt8]) {
        self.database = database
        self.owner = owner
        self.vaultID = vaultID
    }

    /// The login name of the effective user (``UserDatabase/loginName(of:)``: `#<uid>`
    /// when the password database has no entry), the default ``owner``.
    public static var currentUser: String {
        UserDatabase.loginName(of: UInt32(geteuid()))
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
    /// Runs Argon2id once (about a second with ``KDFParameters/moderate``). Uses `log`, or
    /// opens the audit log (creating its key file and head if this store has none yet),
    /// because the vault's `templates_sealed` marker is part of the authenticated state.
    /// With `entry` (`vault.init`, say), the vault's first audit record is written in the
    /// same transaction, so no vault ever exists without one; its journald copy goes
    /// after the commit.
    /// - Throws: ``VaultError/alreadyInitialized(directory:)`` if a vault exists (nothing
    ///   is changed), ``VaultError/invalidArgument(_:)`` for an empty passphrase,
    ///   ``VaultError/keyDerivationFailed(parameters:)``, ``IntegrityError/stateTampered(detail:)``
    ///   when the state was edited (nothing is created), ``AuditError``, or ``StoreError``.
    @discardableResult
    public static func create(database: TouchgateDatabase, passphrase: SecretBytes,
                              kdf: KDFParameters = .default, owner: String = Vault.currentUser,
                              log: AuditLog? = nil, recording entry: AuditEntry? = nil) throws -> Vault {
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
        let key = VaultKey(bytes: SecretBytes.random(count: SecretBox.keyBytes), vaultID: vaultID)
        let now = Date().timeIntervalSince1970
        let meta = MetaRecord(vaultID: vaultID, kdf: kdf, salt: salt, wrappedKey: [], templatesSealed: false)
        let wrapped = SecretBox.wrap(key.bytes, under: kek, associatedData: meta.associatedData)
        // The vault's marker joins the authenticated state: the audit head must be there to cover it.
        let log = try log ?? AuditLog(database: database)
        precondition(log.database.location == database.location, "the audit log belongs to another data directory")
        let record = try database.writeImmediately { db -> AuditRecord? in
            if try MetaRecord.fetch(db) != nil { throw VaultError.alreadyInitialized(directory: directory) }
            let head = try log.requireAuthenticState(db)
            try db.execute(sql: """
                INSERT INTO vault_meta (id, format, vault_id, kdf_algorithm, kdf_opslimit, kdf_memlimit,
                                        kdf_salt, wrapped_vault_key, templates_sealed, created_at, passphrase_changed_at)
                VALUES (1, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                """, arguments: [format, Data(vaultID), Int(kdf.algorithm), Int64(kdf.opsLimit), Int64(kdf.memLimit),
                                 Data(salt), Data(wrapped), now, now])
            try sealPlaintextTemplates(db, with: VaultTemplateSealing(vaultKey: key))
            try log.saveState(db, head: head)
            return try entry.map { try log.insert($0, db) }
        }
        if let record { log.journal.send(record) }
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
    public func unlock(passphrase: SecretBytes) throws -> VaultKey {
        let meta = try currentMeta()
        return try Self.openVaultKey(meta, passphrase: passphrase, device: .configured)
    }

    /// Replaces the passphrase: re-wraps the vault key under a key derived from `new`
    /// with a fresh salt (and `kdf`, or the current parameters). Items, templates and an
    /// unlocked session are untouched; `old` stops working.
    ///
    /// ``preparePassphraseChange(from:to:kdf:)`` then ``StoreTransaction/changePassphrase(_:in:)``
    /// do the same with the audit record in the same transaction.
    /// - Throws: ``VaultError/wrongPassphrase`` when `old` is wrong (or the passphrase was
    ///   changed meanwhile by another process), ``VaultError/invalidArgument(_:)``.
    public func changePassphrase(from old: SecretBytes, to new: SecretBytes, kdf: KDFParameters? = nil) throws {
        let change = try preparePassphraseChange(from: old, to: new, kdf: kdf)
        try AuditLog.opened(in: database).atomically { transaction in try transaction.changePassphrase(change, in: self) }
    }

    /// Checks `old` and wraps the vault key under `new` (Argon2id twice, a few seconds with
    /// ``KDFParameters/moderate``), without writing: run this outside any transaction, then
    /// store the result with ``StoreTransaction/changePassphrase(_:in:)``.
    /// - Throws: ``VaultError/wrongPassphrase``, ``VaultError/invalidArgument(_:)``,
    ///   ``VaultError/keyDerivationFailed(parameters:)``.
    public func preparePassphraseChange(from old: SecretBytes, to new: SecretBytes,
                                        kdf: KDFParameters? = nil) throws -> PassphraseChange {
        guard new.count > 0 else { throw VaultError.invalidArgument("the new passphrase must not be empty") }
        let meta = try currentMeta()
        let parameters = kdf ?? meta.kdf
        guard parameters.isAcceptable else {
            throw VaultError.invalidArgument("unsupported key-derivation parameters \(parameters)")
        }
        let key = try Self.openVaultKey(meta, passphrase: old, device: .configured)
        let salt = Sodium.randomBytes(count: Int(crypto_pwhash_saltbytes()))
        var kek = try parameters.deriveKey(passphrase: new, salt: salt)
        var binding: Data?
        var guards: (new: UInt32, retired: UInt32?)?
        if var tpm = meta.tpm {
            // Bound: a new guard for the new passphrase's authorization guards a new secret
            // in the same TPM (a format-1 binding moves to a guard here).
            let secret = SecretBytes.random(count: SecretBox.keyBytes)
            let device = TPMDevice.configured
            let (sealed, guardIndex) = try Self.sealGuarded(secret, base: kek, device: device)
            guards = (guardIndex, tpm.guardIndex)
            tpm.sealed = sealed
            tpm.guardIndex = guardIndex
            if tpm.tpmName == nil { tpm.tpmName = try? device.identity() }
            tpm.format = 2
            kek = TPMBinding.kek(base: kek, secret: secret)
            binding = try tpm.encoded()
        }
        let next = MetaRecord(vaultID: vaultID, kdf: parameters, salt: salt, wrappedKey: [],
                              templatesSealed: meta.templatesSealed)
        let wrapped = SecretBox.wrap(key.bytes, under: kek, associatedData: next.associatedData)
        return PassphraseChange(vaultID: vaultID, parameters: parameters, salt: salt, wrappedKey: wrapped,
                                replacing: meta.wrappedKey, binding: binding, guards: guards)
    }

    /// Stores a prepared change inside the caller's transaction.
    func apply(_ db: Database, _ change: PassphraseChange) throws {
        precondition(change.vaultID == vaultID, "this PassphraseChange was prepared for another vault")
        // Compare-and-swap: a concurrent change made `old` wrong; say so rather than overwrite it.
        try db.execute(sql: """
            UPDATE vault_meta SET kdf_algorithm = ?, kdf_opslimit = ?, kdf_memlimit = ?, kdf_salt = ?,
                                  wrapped_vault_key = ?, passphrase_changed_at = ?, tpm_binding = coalesce(?, tpm_binding)
            WHERE id = 1 AND vault_id = ? AND wrapped_vault_key = ?
            """, arguments: [Int(change.parameters.algorithm), Int64(change.parameters.opsLimit),
                             Int64(change.parameters.memLimit), Data(change.salt), Data(change.wrappedKey),
                             Date().timeIntervalSince1970, change.binding, Data(vaultID), Data(change.replacing)])
        guard db.changesCount == 1 else { throw VaultError.wrongPassphrase }
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

    /// Argon2id, for a vault bound to a TPM the TPM's secret, then one AEAD open; a failure
    /// of the passphrase or of the stored data is ``VaultError/wrongPassphrase``.
    static func openVaultKey(_ meta: MetaRecord, passphrase: SecretBytes, device: TPMDevice) throws -> VaultKey {
        // Out-of-range parameters can only come from an altered row: same answer as a
        // wrong passphrase, so the error says nothing about which part was wrong.
        guard meta.kdf.isAcceptable, meta.salt.count == Int(crypto_pwhash_saltbytes()),
              meta.claimsTPM == (meta.tpm != nil) else {
            throw VaultError.wrongPassphrase
        }
        var kek = try meta.kdf.deriveKey(passphrase: passphrase, salt: meta.salt)
        if let tpm = meta.tpm {
            // Every guess goes through the TPM, which counts the wrong ones.
            let secret = try Self.tpm { try device.unseal(tpm.sealed, auth: TPMBinding.auth(base: kek)) }
            kek = TPMBinding.kek(base: kek, secret: secret)
        }
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

/// A passphrase change prepared by ``Vault/preparePassphraseChange(from:to:kdf:)``: the vault
/// key wrapped under the new passphrase, and the wrapped key it replaces.
///
/// Holds no secret (only wrapped keys, a salt and parameters). Storing it fails with
/// ``VaultError/wrongPassphrase`` if the passphrase was changed since it was prepared.
public struct PassphraseChange: Sendable {
    let vaultID: [UInt8]
    let parameters: KDFParameters
    let salt: [UInt8]
    let wrappedKey: [UInt8]
    /// The wrapped key read when the old passphrase was checked (the compare-and-swap value).
    let replacing: [UInt8]
    /// For a vault bound to a TPM: the binding with the secret sealed under the new passphrase.
    var binding: Data?
    /// For a vault bound to a TPM: the new passphrase's guard, and the old one's, which
    /// guards nothing once the change is stored (removed then; the new one is removed
    /// instead when the change is not stored).
    var guards: (new: UInt32, retired: UInt32?)?
}

/// The `vault_meta` row.
struct MetaRecord {
    var vaultID: [UInt8]
    var kdf: KDFParameters
    var salt: [UInt8]
    var wrappedKey: [UInt8]
    var templatesSealed: Bool
    /// The TPM binding, when the vault key needs the TPM (an unreadable one reads as bound
    /// to nothing usable: the unwrap then fails as for a wrong passphrase).
    var tpm: TPMBinding?
    /// `tpm_binding` is set, readable or not.
    var claimsTPM = false

    /// Whether a vault exists (the row is there, whatever it holds).
    static func exists(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM vault_meta WHERE id = 1)") ?? false
    }

    static func fetch(_ db: Database) throws -> MetaRecord? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT vault_id, kdf_algorithm, kdf_opslimit, kdf_memlimit, kdf_salt, wrapped_vault_key, templates_sealed,
                   tpm_binding
            FROM vault_meta WHERE id = 1
            """) else { return nil }
        let algorithm: Int64 = row["kdf_algorithm"], ops: Int64 = row["kdf_opslimit"], mem: Int64 = row["kdf_memlimit"]
        let vaultID: Data = row["vault_id"], salt: Data = row["kdf_salt"], wrapped: Data = row["wrapped_vault_key"]
        var meta = MetaRecord(
            vaultID: Array(vaultID),
            kdf: KDFParameters(algorithm: Int32(truncatingIfNeeded: algorithm),
                               opsLimit: UInt64(max(ops, 0)), memLimit: UInt64(max(mem, 0))),
            salt: Array(salt), wrappedKey: Array(wrapped), templatesSealed: isSet(row["templates_sealed"]))
        let binding = row["tpm_binding"] as DatabaseValue
        meta.claimsTPM = !binding.isNull
        if case let .blob(data) = binding { meta.tpm = TPMBinding.decode(data) }
        return meta
    }

    /// Reads the marker without trapping on a hand-edited value: only a non-zero integer
    /// is "sealed"; anything else sends the caller down the sealing path, whose state
    /// check then reports the edit.
    private static func isSet(_ value: DatabaseValue) -> Bool {
        if case let .int64(number) = value { return number != 0 }
        return false
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
