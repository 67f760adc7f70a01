import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// Creates the vault under a new passphrase (asked through `interaction`; refused when
    /// libpwquality refuses it) and seals every template enrolled before it. The vault is
    /// left unlocked, as after `unlock`.
    public func initialize(stretching: KeyStretching = .moderate, tpm: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> InitReport {
        try await withStore { store in
            if try store.vaultExists() {
                throw VaultError.alreadyInitialized(directory: location.directory.path)
            }
            if tpm {
                // Before anything is made: a vault meant for the TPM is not left without it.
                _ = try TPMDevice.configured.dictionaryAttackState()
            }
            // Nor is one made that could not be left unlocked (a revoked session keyring).
            try custodyCheck()
            let secret = try await PassphraseEntry.new(interaction, prompt: "New vault passphrase: ",
                                                 user: principal.loginName)
            let kdf = stretching.parameters
            // The vault and its first audit record are one transaction.
            let log = try store.audit()
            let owner = principal.loginName
            let vault = try await PassphraseEntry.offThread {
                try Vault.create(database: store.database, passphrase: secret, kdf: kdf, owner: owner, log: log,
                                 recording: AuditEntry(event: .vaultInit, outcome: .success, vaultUser: owner,
                                                       reason: "vault created (\(kdf))"))
            }
            // Then unlocked, as after `touchgate unlock`: the passphrase was just entered.
            let key = try await PassphraseEntry.offThread { try vault.unlock(passphrase: secret) }
            let context = try store.vault()
            _ = try await context.evaluator.unlock(passphrase: AlreadyVerified())
            try context.custody.hold(key)
            guard tpm else { return InitReport(directory: location.directory.path, owner: vault.owner) }
            let recovery = try await PassphraseEntry.offThread {
                try vault.bindToTPM(passphrase: secret, device: .configured, log: log)
            }
            return InitReport(directory: location.directory.path, owner: vault.owner,
                              recoveryKey: recovery.text().withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
        }
    }

    /// Unlocks with the passphrase: the key goes to the custody, every lockout is lifted
    /// and a fingerprint alone may release secrets for the next 72 hours of this boot.
    public func unlock(onlyIfDue: Bool, interaction: any Interaction) async throws(ServiceError) -> UnlockReport {
        if onlyIfDue, !hasStore { return UnlockReport(unlocked: false) }
        return try await withExistingStore(orElse: noVault) { store in
            if onlyIfDue, !(try store.vaultExists()) { return UnlockReport(unlocked: false) }
            let context = try store.vault()
            try context.requireIntactState()
            if onlyIfDue, context.custody.isHolding, try context.evaluator.status().passphraseRequirement == nil {
                return UnlockReport(unlocked: false)
            }
            let lockedOut = try context.evaluator.status().lockout != nil
            let verifier = context.verifier(interaction, unlocking: true)
            do {
                _ = try await context.evaluator.unlock(passphrase: verifier)
            } catch {
                throw verifier.explain(error)
            }
            return UnlockReport(unlocked: true, lockoutLifted: lockedOut)
        }
    }

    /// Moves an unlocked key from the kernel keyring into this service's custody (touchgate
    /// agent taking the personal store over): the keyring no longer holds it, so no other
    /// process of the user can read it there. True when a key was moved; nothing is
    /// created for a user without a store.
    public func takeOverKeyringKey() async throws(ServiceError) -> Bool {
        guard hasStore else { return false }
        return try await withStore { store in
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            let keyring = KernelKeyringCustody(vault: vault)
            guard let key = try keyring.currentKey() else { return false }
            try store.custody(vault).hold(key)
            _ = try keyring.release()
            return true
        }
    }

    /// Locks: the key is released first, whatever else is damaged, then the session is
    /// ended and the lock audited. Damage met after the key is gone is reported in the
    /// result, not thrown: the lock itself succeeded.
    public func lock() async throws(ServiceError) -> LockReport {
        try await withStore { store in
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            let wasUnlocked = try store.custody(vault).release()
            do {
                let context = try store.vault()
                try context.requireIntactState()
                try await usingReserve(for: "lock") {
                    try context.evaluator.lock(reason: wasUnlocked ? "locked by user" : "locked by user (key already gone)")
                    // Locking ends every program's approval too (the Secret Service's).
                    // and every run's lease.
                    for key in [Self.approvalsStateKey, Self.runLeasesStateKey] where try context.stateStore.state(key) != nil {
                        try context.stateStore.updateState(key) { $0 = nil }
                    }
                }
                return LockReport(wasUnlocked: wasUnlocked, problem: nil)
            } catch {
                return LockReport(wasUnlocked: wasUnlocked, problem: ServiceError.from(error).message)
            }
        }
    }

    /// Changes the passphrase: the current one is checked first (so a typo is reported at
    /// once), then the new one is asked for. Items, prints and a held key are untouched.
    public func passphraseChange(stretching: KeyStretching? = nil, current: any Interaction,
                                 new: any Interaction) async throws(ServiceError) {
        try await withStore { store in
            let context = try store.vault()
            try context.requireIntactState()
            let recordWrong = { try context.record(.passphraseChange, .failure, reason: "wrong current passphrase") }
            let old: SecretBytes
            do {
                (old, _) = try await PassphraseEntry.open(context.vault, interaction: current, prompt: "Current passphrase",
                                                          wrong: { _ in try recordWrong() })
            } catch VaultError.wrongPassphrase {
                try recordWrong()
                throw VaultError.wrongPassphrase
            }
            let next = try await PassphraseEntry.new(new, prompt: "New passphrase: ", user: principal.loginName)
            // Argon2id first, outside the transaction; then the new wrapping and its record together.
            let vault = context.vault
            let kdf = stretching?.parameters
            let change = try await PassphraseEntry.offThread {
                try vault.preparePassphraseChange(from: old, to: next, kdf: kdf)
            }
            let parameters = try stretching?.parameters ?? context.vault.kdfParameters()
            try context.audit.atomically { transaction in
                try transaction.changePassphrase(change, in: context.vault)
                try transaction.append(.passphraseChange, .success, vaultUser: context.vault.owner,
                                       reason: "passphrase changed (\(parameters))")
            }
        }
    }
}

extension KeyStretching {
    /// The Argon2id limits it stands for.
    var parameters: KDFParameters {
        switch self {
        case .moderate: .moderate
        case .minimum: .minimum
        }
    }
}
