import Foundation
import TouchgatePolicy
import TouchgateVault

/// Releasing or replacing one item: what `secret get`, `secret exec` and `secret add` share.
///
/// Order: the vault must be unlocked (its key is in the keyring); the item's policy is
/// evaluated (lockout checked before any reader is opened; the reader opened only if a
/// touch is needed); the grant is audited durably by the evaluator; only then is the item
/// decrypted. A decryption failure after a grant is audited as `integrity.failure`.
enum SecretAccess {
    /// Authorizes reading `name` and returns its value.
    static func read(_ name: String, context: VaultContext, device: String?, passphrase: PassphraseInput,
                     console: Console) async throws -> SecureBytes {
        guard let key = try context.session.currentKey() else {
            try context.record(.itemRead, .denied, item: name, reason: "vault locked")
            throw Failure.vaultLocked
        }
        let descriptor = try descriptor(of: name, in: context.vault)
        try await authorize(descriptor, .read, context: context, key: key, device: device, passphrase: passphrase,
                            console: console)
        do {
            return try context.vault.item(named: name, key: key).value
        } catch let error as VaultError {
            if case .integrity = error {
                try context.record(.integrityFailure, .error, item: name, reason: "item failed its integrity check")
            }
            throw error
        }
    }

    /// Asks the evaluator for `operation` on `item`, with a lazily opened reader and the
    /// passphrase as fallback; the evaluator audits the decision.
    static func authorize(_ item: ItemDescriptor, _ operation: ItemOperation, context: VaultContext, key: VaultKey,
                          device: String?, passphrase: PassphraseInput, console: Console) async throws {
        let enrollment = try EnrollmentTracker.status(database: context.database)
        let sensor = ReaderSensor(device: device, console: console, prints: try context.printStore(key: key))
        do {
            _ = try await context.evaluator.authorize(
                item: item, operation: operation, enrollment: enrollment, sensor: sensor,
                passphrase: context.verifier(passphrase))
        } catch {
            await sensor.close()
            if error == .readerUnavailable, let cause = await sensor.lastFailure { throw cause }
            throw passphrase.explain(error)
        }
        await sensor.close()
    }

    /// What the policy core needs to know about the stored item `name`.
    static func descriptor(of name: String, in vault: Vault) throws -> ItemDescriptor {
        guard let info = try vault.items().first(where: { $0.name == name }) else {
            throw VaultError.itemNotFound(name: name)
        }
        return try descriptor(of: info)
    }

    /// What the policy core needs to know about a stored item.
    static func descriptor(of info: VaultItemInfo) throws -> ItemDescriptor {
        let policy: AccessPolicy
        do {
            policy = try AccessPolicy(parsing: info.policy)
        } catch {
            throw VaultError.integrity(what: "the policy of item \"\(info.name)\"")
        }
        return ItemDescriptor(name: info.name, policy: policy,
                              boundEnrollmentState: info.enrollmentDigest.map(EnrollmentState.init(digest:)),
                              requiresFreshTouch: info.freshTouch)
    }
}
