import Foundation
import TouchgatePolicy
import TouchgateVault
import TouchgateWire

/// A change to the limits; nil leaves a value as it is.
public struct SettingsChange: Sendable, Equatable {
    /// Failed touches in a row that start a lockout (1…20).
    public var lockoutThreshold: Int?
    /// How long a lockout lasts, in seconds (1…86400).
    public var lockoutDurationSeconds: Int?
    /// How long a touch may be reused, in seconds (0…300).
    public var sessionTimeoutSeconds: Int?
    /// Idle time that ends the session, in seconds (at most the session timeout).
    public var idleTimeoutSeconds: Int?

    /// A change.
    public init(lockoutThreshold: Int? = nil, lockoutDurationSeconds: Int? = nil, sessionTimeoutSeconds: Int? = nil,
                idleTimeoutSeconds: Int? = nil) {
        self.lockoutThreshold = lockoutThreshold
        self.lockoutDurationSeconds = lockoutDurationSeconds
        self.sessionTimeoutSeconds = sessionTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
    }
}

extension TouchgateService {
    /// The limits in force.
    public func settings() async throws(ServiceError) -> SettingsReport {
        try await withStore { store in try store.vault().settings.report }
    }

    /// Changes the limits: checked first, then the passphrase; the change and its audit
    /// record are one transaction.
    public func changeSettings(_ change: SettingsChange, interaction: any Interaction) async throws(ServiceError)
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
                       passphraseOnlyThreshold: PolicyConfiguration.standard.passphraseOnlyThreshold)
    }
}
