import CTouchgateSys
import Foundation
import TouchgatePolicy
import TouchgateVault

/// The vault and everything that guards it, opened for one command: the keyring session,
/// the audit log, the stored policy settings and an evaluator wired to all of them.
struct VaultContext: Sendable {
    let database: TouchgateDatabase
    let vault: Vault
    let session: VaultSession
    let audit: AuditLog
    let stateStore: StateStore
    let settings: PolicySettings
    let evaluator: AccessEvaluator

    /// Opens the vault in the default data directory.
    /// - Throws: a `VaultError.notInitialized` when `touchgate init` has not been run.
    static func open() throws -> VaultContext {
        try open(database: Storage.database())
    }

    /// Opens the vault in `database`.
    static func open(database: TouchgateDatabase) throws -> VaultContext {
        let vault = try Vault.open(database: database)
        let audit = try AuditLog(database: database)
        let stateStore = StateStore(database: database)
        let settings = try PolicySettings.load(stateStore)
        let evaluator = AccessEvaluator(
            configuration: try settings.configuration(), clock: SystemClock(),
            store: VaultPolicyStateStore(store: stateStore),
            auditSink: VaultAuditSink(log: audit, vaultUser: vault.owner), principal: principal)
        return VaultContext(database: database, vault: vault, session: Storage.session(vault), audit: audit,
                            stateStore: stateStore, settings: settings, evaluator: evaluator)
    }

    /// Before enrolling or deleting a finger: when a vault exists, opens it and has the
    /// policy core authorize the change (the passphrase is asked for and audited); without
    /// a vault there is nothing to protect yet and nil is returned.
    static func authorizingEnrollmentChange(_ change: EnrollmentChange, database: TouchgateDatabase,
                                            input: PassphraseInput) async throws -> VaultContext? {
        guard try Vault.exists(in: database) else { return nil }
        let context = try open(database: database)
        do {
            _ = try await context.evaluator.authorizeEnrollmentChange(
                change, vaultExists: true, passphrase: context.verifier(input))
        } catch {
            throw input.explain(error)
        }
        return context
    }

    /// Who acts, as the evaluator names it: `uid=1000(alice)`.
    static var principal: String { "uid=\(getuid())(\(LoginName.current))" }

    /// The vault key from the keyring.
    /// - Throws: ``Failure/vaultLocked`` when the vault is locked.
    func requireKey() throws -> VaultKey {
        guard let key = try session.currentKey() else { throw Failure.vaultLocked }
        return key
    }

    /// Whether the vault key is in the keyring, checked without reading it, so that asking
    /// (`touchgate status`, a shell prompt) does not count as use and never delays the idle lock.
    var isUnlocked: Bool {
        CTouchgateSys_key_search_user(session.keyDescription) > 0
    }

    /// The print store with templates sealed under `key`.
    func printStore(key: VaultKey) throws -> PrintStore {
        PrintStore(database: database, sealing: try vault.templateSealing(key: key))
    }

    /// Checks passphrases for the evaluator; with `unlocking`, a correct one also puts
    /// the vault key in the keyring.
    func verifier(_ input: PassphraseInput, unlocking: Bool = false) -> VaultPassphraseVerifier {
        VaultPassphraseVerifier(vault: vault, input: input, session: unlocking ? session : nil)
    }

    /// Appends one audit record for something the evaluator does not decide itself.
    func record(_ event: AuditEvent, _ outcome: AuditOutcome, item: String? = nil, reason: String) throws {
        try audit.append(event, outcome, vaultUser: vault.owner, item: item, reason: reason)
    }

    /// Checks the passphrase for an administrative change (`policy set`) and audits the attempt.
    /// - Throws: `VaultError.wrongPassphrase` after recording the failure.
    func checkPassphrase(_ input: PassphraseInput, purpose: String) throws {
        let passphrase = try input.passphrase(prompt: "Passphrase to \(purpose): ")
        do {
            _ = try vault.unlock(passphrase: passphrase)
        } catch VaultError.wrongPassphrase {
            try record(.authAttempt, .failure, reason: "passphrase: wrong passphrase (\(purpose))")
            throw VaultError.wrongPassphrase
        }
        try record(.authAttempt, .success, reason: "passphrase: passphrase verified (\(purpose))")
    }
}

/// The vault's passphrase check, as the policy core asks for it.
///
/// Reads the passphrase (terminal or `--passphrase-fd`), runs Argon2id and tries to open
/// the vault key; only the verdict leaves. With a `session`, a correct passphrase also
/// stores the vault key in the kernel keyring (`touchgate unlock`).
struct VaultPassphraseVerifier: PassphraseVerifier {
    let vault: Vault
    let input: PassphraseInput
    let session: VaultSession?

    func verifyPassphrase(prompt: String) async throws(PassphraseEntryError) -> Bool {
        let passphrase: SecureBytes
        do {
            passphrase = try input.passphrase(prompt: prompt + ": ")
        } catch is CancellationError {
            throw .cancelled
        } catch {
            input.record(error)
            throw .unavailable
        }
        do {
            if let session {
                try session.unlock(passphrase: passphrase)
            } else {
                _ = try vault.unlock(passphrase: passphrase)
            }
            return true
        } catch VaultError.wrongPassphrase {
            return false
        } catch {
            input.record(error)
            throw .unavailable
        }
    }
}
