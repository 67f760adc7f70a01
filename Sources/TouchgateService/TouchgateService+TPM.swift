import FoundationEssentials
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// Whether the TPM guards the vault key, and its counter and lockout state.
    public func tpmStatus() async throws(ServiceError) -> TPMStatusReport {
        try await withExistingStore(orElse: noVault) { store in
            guard try store.vaultExists() else { throw noVault }
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            return TPMStatusReport(try vault.tpmStatus(device: .configured, log: try store.audit()))
        }
    }

    /// Binds the vault key to the TPM after the passphrase (every try counted, the wrong
    /// ones audited); the recovery key is returned once and kept nowhere in clear.
    public func tpmEnroll(interaction: any Interaction) async throws(ServiceError) -> TPMEnrollReport {
        try await withExistingStore(orElse: noVault) { store in
            guard try store.vaultExists() else { throw noVault }
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            let log = try store.audit()
            let wrong = { (_: Int) in
                _ = try? log.append(.authAttempt, .failure, vaultUser: vault.owner, reason: "passphrase: wrong passphrase (tpm enroll)")
            }
            let passphrase: SecretBytes
            do {
                (passphrase, _) = try await PassphraseEntry.open(vault, interaction: interaction,
                                                                 prompt: "Passphrase to bind the vault to the TPM", wrong: wrong)
            } catch VaultError.wrongPassphrase {
                wrong(0)
                throw VaultError.wrongPassphrase
            }
            interaction.notice("binding the vault key to the TPM (\(TPMDevice.configured.name))…")
            let recovery = try await PassphraseEntry.offThread {
                try vault.bindToTPM(passphrase: passphrase, device: .configured, log: log)
            }
            let text = recovery.text().withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            let index = try vault.tpmStatus(device: .configured, log: log).counterIndex ?? 0
            return TPMEnrollReport(recoveryKey: text, counterIndex: "0x" + String(index, radix: 16))
        }
    }

    /// Binds the vault to this TPM again with the recovery key, under a new passphrase.
    public func tpmRecover(interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
        try await withExistingStore(orElse: noVault) { store in
            guard try store.vaultExists() else { throw noVault }
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            // The counter of the old TPM may be gone: the log is opened without its check.
            let log = try AuditLog(database: store.database, checkingTPMCounter: false)
            let typed = try await interaction.passphrase(prompt: "Recovery key (64 hex digits): ", again: false)
            guard let recovery = RecoveryKey(parsing: typed) else {
                throw ServiceError.usage("that is not a recovery key: it is 64 hex digits, in groups of 8 separated by hyphens, as `touchgate tpm enroll` showed it; nothing was changed")
            }
            let passphrase = try await PassphraseEntry.new(interaction, prompt: "New vault passphrase: ",
                                                           user: principal.loginName)
            do {
                try await PassphraseEntry.offThread {
                    try vault.recoverTPM(recoveryKey: recovery, passphrase: passphrase, device: .configured, log: log)
                }
            } catch VaultError.wrongPassphrase {
                _ = try? log.append(.authAttempt, .failure, vaultUser: vault.owner, reason: "recovery key: wrong (tpm recover)")
                throw ServiceError(.wrongPassphrase, "the recovery key does not open this vault; nothing was changed")
            }
            return EmptyReport()
        }
    }
}

extension TPMStatusReport {
    /// The report of what the vault found.
    init(_ status: TPMStatus) {
        let da = status.dictionaryAttack
        self.init(bound: status.bound, counterIndex: status.counterIndex.map { "0x" + String($0, radix: 16) },
                  storeCounter: status.storeCounter, tpmCounter: status.tpmCounter, manufacturer: da?.manufacturer,
                  failures: da?.failures, maximumFailures: da?.maximumFailures,
                  forgetsOneEverySeconds: da?.forgetsOneEverySeconds, lockedOut: da?.isLockedOut,
                  lockoutRemainingSeconds: da.map(\.secondsUntilAccepting), problem: status.problem,
                  guardIndex: status.guardIndex.map { "0x" + String($0, radix: 16) }, guardFailures: status.guardFailures,
                  guardLimit: status.guardLimit, counterAdoptedAt: status.adoptedAt,
                  counterAdoptedChanges: status.adoptedChanges)
    }
}
