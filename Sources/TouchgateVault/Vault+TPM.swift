import CSodium
import FoundationEssentials
public import TouchgateBasics

extension Vault {
    /// Binds the vault key to `device`: from now on the passphrase opens the vault only
    /// through the TPM (see ``TPMBinding``). Returns the recovery key, to show once.
    ///
    /// Checks the passphrase first (Argon2id, then the current wrapping), seals a fresh
    /// secret in the TPM under a new salt, defines the NV counter, and stores the new
    /// wrapping, the binding and the counter's value with an audit record in one
    /// transaction. The passphrase-only wrapping is replaced, not kept.
    /// - Throws: ``VaultError/wrongPassphrase``, ``VaultError/invalidArgument(_:)`` when
    ///   already bound, ``VaultError/tpm(_:)`` when the TPM refuses or cannot be reached
    ///   (nothing is changed), ``IntegrityError/stateTampered(detail:)``.
    public func bindToTPM(passphrase: SecretBytes, device: TPMDevice, log: AuditLog) throws -> RecoveryKey {
        let meta = try currentMeta()
        guard meta.tpm == nil else {
            throw VaultError.invalidArgument("this vault is already bound to a TPM; `touchgate tpm status` shows it")
        }
        let key = try Self.openVaultKey(meta, passphrase: passphrase, device: device)
        let recovery = RecoveryKey(random: ())
        let wrappedForRecovery = SecretBox.wrap(key.bytes, under: TPMBinding.recoveryKEK(recovery.bytes),
                                                associatedData: TPMBinding.recoveryAssociatedData(vaultID: vaultID))
        try bind(key, meta: meta, passphrase: passphrase, recovery: wrappedForRecovery, device: device, log: log,
                 recording: .tpmEnroll, "the vault key is bound to the TPM (\(device.name))")
        return recovery
    }

    /// Binds the vault to this machine's TPM again with the recovery key, after the TPM
    /// was cleared or replaced (or the store moved to another machine), and sets
    /// `passphrase` as the passphrase from now on. The recovery key stays the same.
    /// - Throws: ``VaultError/wrongPassphrase`` for a recovery key that does not open the
    ///   vault (nothing changes), ``VaultError/invalidArgument(_:)`` when the vault is not
    ///   bound, ``VaultError/tpm(_:)``.
    public func recoverTPM(recoveryKey: RecoveryKey, passphrase: SecretBytes, device: TPMDevice,
                           log: AuditLog, accepting state: String? = nil) throws {
        guard passphrase.count > 0 else { throw VaultError.invalidArgument("the passphrase must not be empty") }
        let meta = try currentMeta()
        guard let old = meta.tpm else {
            throw VaultError.invalidArgument("this vault is not bound to a TPM: there is nothing to recover")
        }
        guard let bytes = SecretBox.unwrap(old.recovery, under: TPMBinding.recoveryKEK(recoveryKey.bytes),
                                           associatedData: TPMBinding.recoveryAssociatedData(vaultID: vaultID)) else {
            throw VaultError.wrongPassphrase
        }
        let key = VaultKey(bytes: bytes, vaultID: vaultID)
        try bind(key, meta: meta, passphrase: passphrase, recovery: old.recovery, device: device, log: log,
                 recording: .tpmRecover, (state.map { "\($0); " } ?? "")
                    + "bound again to the TPM (\(device.name)) with the recovery key; a new passphrase was set")
    }

    /// Defines a counter on `device`, seals a new secret there under `passphrase`, and stores
    /// the new wrapping, the binding and the counter's value with a record, in one transaction
    /// (compare-and-swap on the wrapping read in `meta`). A failure removes the counter again.
    private func bind(_ key: VaultKey, meta: MetaRecord, passphrase: SecretBytes, recovery: [UInt8], device: TPMDevice,
                      log: AuditLog, recording event: AuditEvent, _ reason: String) throws {
        let counterAuth = log.tpmCounterAuth
        let identity = try Self.tpm { try device.identity() }
        let (index, value) = try Self.tpm { try device.defineCounter(auth: counterAuth) }
        var guardIndex: UInt32?
        do {
            let (salt, wrapped, sealed, guarded) = try Self.sealForTPM(key, meta: meta, passphrase: passphrase,
                                                                      device: device)
            guardIndex = guarded
            let binding = TPMBinding(sealed: sealed, counter: index, recovery: recovery, guardIndex: guarded,
                                     tpmName: identity)
            try log.atomically { transaction in
                try transaction.changingAuthenticatedState { db in
                    try Self.store(db, vaultID: vaultID, salt: salt, wrappedKey: wrapped, binding: binding,
                                   replacing: meta.wrappedKey)
                    _ = try StateStore.update(db, TPMBinding.counterStateKey) { $0 = TPMCounter.encode(value) }
                }
                try transaction.append(event, .success, vaultUser: owner,
                                       reason: reason + "; rollback counter 0x" + String(index, radix: 16))
            }
        } catch {
            try? device.removeIndex(index)
            if let guardIndex { try? device.removeIndex(guardIndex) }
            throw error
        }
        // The old binding's guard, when it is on this same TPM, guards nothing now.
        if let old = meta.tpm, let oldGuard = old.guardIndex, old.tpmName == identity {
            try? device.removeIndex(oldGuard)
        }
    }

    /// Whether the vault key needs a TPM (read from the store; the TPM is not asked).
    public func isBoundToTPM() throws -> Bool {
        try currentMeta().claimsTPM
    }

    /// Whether the vault is bound to a TPM and, when `device` can be reached, the TPM's
    /// counter and dictionary-attack state. Never throws for an unreachable TPM: says so.
    public func tpmStatus(device: TPMDevice, log: AuditLog) throws -> TPMStatus {
        let meta = try currentMeta()
        let stored = try StateStore(log: log).state(TPMBinding.counterStateKey).flatMap(TPMCounter.decode)
        var status = TPMStatus(bound: meta.tpm != nil, counterIndex: meta.tpm?.counter, storeCounter: stored,
                               guardIndex: meta.tpm?.guardIndex)
        if let adoption = try log.lastCounterAdoption() {
            status.adoptedAt = adoption.time
            status.adoptedChanges = adoption.changes
        }
        do {
            status.dictionaryAttack = try device.dictionaryAttackState()
            if let index = meta.tpm?.counter {
                status.tpmCounter = try device.counter(index, auth: log.tpmCounterAuth)
            }
            if let guardIndex = meta.tpm?.guardIndex {
                let (count, limit) = try device.guardStatus(guardIndex)
                status.guardFailures = count
                status.guardLimit = limit
            }
        } catch let error as TPMError {
            status.problem = error.description
        }
        return status
    }

    /// A new salt, a new passphrase guard, the TPM's new secret sealed behind it, and the
    /// vault key wrapped under both.
    private static func sealForTPM(_ key: VaultKey, meta: MetaRecord, passphrase: SecretBytes, device: TPMDevice)
        throws -> (salt: [UInt8], wrapped: [UInt8], sealed: [UInt8], guardIndex: UInt32) {
        let salt = Sodium.randomBytes(count: Int(crypto_pwhash_saltbytes()))
        let base = try meta.kdf.deriveKey(passphrase: passphrase, salt: salt)
        let secret = SecretBytes.random(count: SecretBox.keyBytes)
        let (sealed, guardIndex) = try sealGuarded(secret, base: base, device: device)
        let next = MetaRecord(vaultID: meta.vaultID, kdf: meta.kdf, salt: salt, wrappedKey: [],
                              templatesSealed: meta.templatesSealed)
        let wrapped = SecretBox.wrap(key.bytes, under: TPMBinding.kek(base: base, secret: secret),
                                     associatedData: next.associatedData)
        return (salt, wrapped, sealed, guardIndex)
    }

    /// Defines a guard for the passphrase's key `base` and seals `secret` behind it; the
    /// guard is removed again when sealing fails.
    static func sealGuarded(_ secret: SecretBytes, base: SecretBytes,
                            device: TPMDevice) throws -> (sealed: [UInt8], guardIndex: UInt32) {
        let auth = TPMBinding.auth(base: base)
        let guardIndex = try tpm { try device.defineGuard(auth: auth, limit: TPMBinding.guardLimit) }
        do {
            return (try tpm { try device.seal(secret, auth: auth, guard: guardIndex) }, guardIndex)
        } catch {
            try? device.removeIndex(guardIndex)
            throw error
        }
    }

    /// Writes a new wrapping and binding, compare-and-swap on the wrapping it replaces.
    private static func store(_ db: Database, vaultID: [UInt8], salt: [UInt8], wrappedKey: [UInt8],
                              binding: TPMBinding, replacing: [UInt8]) throws {
        try db.execute(sql: """
            UPDATE vault_meta SET kdf_salt = ?, wrapped_vault_key = ?, tpm_binding = ?, passphrase_changed_at = ?
            WHERE id = 1 AND vault_id = ? AND wrapped_vault_key = ?
            """, arguments: [Data(salt), Data(wrappedKey), try binding.encoded(), Date().timeIntervalSince1970,
                             Data(vaultID), Data(replacing)])
        guard db.changesCount == 1 else { throw VaultError.wrongPassphrase }
    }

    /// Runs a TPM call, turning its error into ``VaultError/tpm(_:)`` (a refused
    /// authorization into ``VaultError/wrongPassphrase``, after the TPM counted it).
    static func tpm<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as TPMError {
            if case .wrongAuth = error { throw VaultError.wrongPassphrase }
            if case .lockout = error { throw VaultError.tpmLockedOut(error.description) }
            if case .exhausted = error { throw VaultError.tpmLockedOut(error.description) }
            throw VaultError.tpm(error.description)
        }
    }
}

/// The store's side of the TPM counter: the value it expects, kept in `vault_state`.
enum TPMCounter {
    static func encode(_ value: UInt64) -> Data {
        withUnsafeBytes(of: value.bigEndian) { Data($0) }
    }

    static func decode(_ data: Data) -> UInt64? {
        guard data.count == 8 else { return nil }
        return data.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Inside an append's transaction: moves the expected value one forward, when the store
    /// is bound. Returns whether it did.
    static func advance(_ db: Database) throws -> Bool {
        guard let stored = try StateStore.value(db, TPMBinding.counterStateKey) else { return false }
        let value = decode(stored) ?? 0
        _ = try StateStore.update(db, TPMBinding.counterStateKey) { $0 = encode(value &+ 1) }
        return true
    }
}
