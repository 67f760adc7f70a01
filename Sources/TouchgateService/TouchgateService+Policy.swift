import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// The limits in force.
    public func policyShow() async throws(ServiceError) -> SettingsReport {
        try await withStore { store in try store.vault().settings.report }
    }

    /// Changes the limits: checked first, then the passphrase; the change and its audit
    /// record are one transaction.
    public func policySet(_ change: SettingsChange, interaction: any Interaction) async throws(ServiceError)
        -> SettingsReport
    {
        try await withStore { store in
            let context = try store.vault()
            try context.requireIntactState()
            let current = try PolicySettings.load(context.stateStore)
            var settings = current
            settings.lockoutThreshold = change.lockoutThreshold ?? settings.lockoutThreshold
            settings.lockoutDurationSeconds = change.lockoutDurationSeconds ?? settings.lockoutDurationSeconds
            settings.sessionTimeoutSeconds = change.sessionTimeoutSeconds ?? settings.sessionTimeoutSeconds
            // Lowering the session timeout lowers an idle timeout above it.
            settings.idleTimeoutSeconds = change.idleTimeoutSeconds
                ?? min(settings.idleTimeoutSeconds, settings.sessionTimeoutSeconds)
            settings.runLeaseSeconds = change.runLeaseSeconds ?? settings.runLeaseSeconds
            settings.passkeyPolicy = change.passkeyPolicy ?? settings.passkeyPolicy
            _ = try settings.configuration()
            let description = settings.changes(from: current)
            do {
                try await context.checkPassphrase(interaction, purpose: "change the policy")
            } catch {
                try context.record(.policyChange, .denied, reason: "refused (\(description)): passphrase not verified")
                throw error
            }
            try context.audit.atomically { transaction in
                try transaction.updateState(PolicySettings.stateKey) { $0 = try settings.encoded() }
                try transaction.append(.policyChange, .success, vaultUser: context.vault.owner, reason: description)
            }
            return settings.report
        }
    }
}

extension PolicySettings {
    /// The wire form.
    var report: SettingsReport {
        SettingsReport(lockoutThreshold: lockoutThreshold, lockoutDurationSeconds: lockoutDurationSeconds,
                       sessionTimeoutSeconds: sessionTimeoutSeconds, idleTimeoutSeconds: idleTimeoutSeconds,
                       passphraseOnlyThreshold: PolicyConfiguration.standard.passphraseOnlyThreshold,
                       runLeaseSeconds: runLeaseSeconds ?? 0, passkeyPolicy: passkeyPolicy ?? "biometry-any")
    }
}
