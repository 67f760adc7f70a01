import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// Repairs state edited outside touchgate, or a wiped audit trail, with the passphrase.
    ///
    /// Nothing is asked when nothing is wrong. Otherwise, after the passphrase is verified
    /// (nothing changes on a wrong one): a lost trail is restarted with a first record
    /// saying so; the state is resealed at its safest values — no failures and no session
    /// (the passphrase was just entered, which lifts any lockout), the default limits
    /// (forged ones are not adopted), the enrollment generation kept when it is readable
    /// (so valid items stay valid; destroyed keys stay destroyed); templates are sealed
    /// one by one where needed, so none is sealed twice. The repair and its record are one
    /// transaction. No item, print or record that still verifies is deleted. The key is
    /// then held, as after `unlock`.
    public func repair(interaction: any Interaction) async throws(ServiceError) -> RepairReport {
        try await withStore { store in
            guard try store.vaultExists() else {
                throw VaultError.notInitialized(directory: location.directory.path)
            }
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            var found: [String] = []
            var wiped: String?
            var rolledBack = false
            do {
                let log = try AuditLog(database: store.database)
                if let problem = try StateStore(log: log).unverifiedState().problem { found.append(problem) }
            } catch AuditError.wiped(let detail) {
                wiped = detail
                found.append("the audit trail is gone: \(detail)")
            } catch IntegrityError.rolledBack(let detail) {
                // Accepting an older copy is the owner's call: with the passphrase, the store
                // takes the TPM's counter as its own from now on.
                rolledBack = true
                found.append("the store is an older copy than the TPM's counter says (\(detail))")
                if let problem = try StateStore(log: try AuditLog(database: store.database, checkingTPMCounter: false))
                    .unverifiedState().problem { found.append(problem) }
            }
            guard !found.isEmpty else {
                return RepairReport(repaired: false, found: [], auditRestarted: false, settingsReset: false)
            }

            let recordWrong = {
                if wiped == nil {
                    _ = try? AuditLog(database: store.database, checkingTPMCounter: !rolledBack).append(
                        .authAttempt, .failure, vaultUser: vault.owner, reason: "passphrase: wrong passphrase (repair)")
                }
            }
            let key: VaultKey
            do {
                (_, key) = try await PassphraseEntry.open(vault, interaction: interaction,
                                                          prompt: "Passphrase to repair the vault",
                                                          wrong: { _ in recordWrong() })
            } catch VaultError.wrongPassphrase {
                recordWrong()
                throw VaultError.wrongPassphrase
            }

            if let wiped {
                _ = try AuditLog.restart(database: store.database, vaultUser: vault.owner,
                                         reason: "\(wiped); a new trail starts here (touchgate repair, passphrase verified)")
            }
            let repairLog = try AuditLog(database: store.database, checkingTPMCounter: false)
            let stateStore = StateStore(log: repairLog)
            let stored = try stateStore.unverifiedState()
            var values: [String: Data] = [:]
            // Bound to a TPM: the store expects the TPM's counter from now on.
            if let counter = try repairLog.currentTPMCounterState() { values[counter.key] = counter.value }
            if let generation = stored.values[EnrollmentTracker.generationKey], generation.count == 8 {
                values[EnrollmentTracker.generationKey] = generation
            }
            let settingsReset = stored.values[PolicySettings.stateKey].map {
                (try? JSONDecoder().decode(PolicySettings.self, from: $0)) != PolicySettings()
            } ?? false
            let summary = found.joined(separator: "; ")
            try stateStore.reseal(values, templatesSealed: false) { outcome in
                AuditEntry(event: AuditEvent(rawValue: "state.repair"), outcome: .success, vaultUser: vault.owner,
                           reason: "repaired with the passphrase: \(summary); failures cleared, default limits"
                               + (outcome.headRebuilt ? ", audit head rebuilt" : ""))
            }
            // Now that the state is authentic again: seal what is plaintext, record the
            // passphrase entry (which lifts any lockout) and hold the key, as unlock does.
            let context = try store.vault()
            _ = try vault.templateSealing(key: key)
            _ = try await context.evaluator.unlock(passphrase: AlreadyVerified())
            try context.custody.hold(key)
            return RepairReport(repaired: true, found: found, auditRestarted: wiped != nil, settingsReset: settingsReset)
        }
    }
}
