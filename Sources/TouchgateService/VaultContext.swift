import FoundationEssentials
import Synchronization
import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

/// The vault and everything that guards it, opened for one request: the key custody,
/// the audit log, the stored policy settings and an evaluator wired to all of them.
struct VaultContext: Sendable {
    let store: StoreAccess
    let vault: Vault
    let custody: any KeyCustody
    /// The audit log, authenticated state, settings and evaluator.
    let guarded: PolicyGuard

    var database: TouchgateDatabase { store.database }
    var audit: AuditLog { guarded.audit }
    var stateStore: StateStore { guarded.stateStore }
    var settings: PolicySettings { guarded.settings }
    var evaluator: AccessEvaluator { guarded.evaluator }

    /// Opens the vault of `store`'s principal.
    /// - Throws: `VaultError.notInitialized` when `touchgate init` has not been run.
    static func open(_ store: StoreAccess) throws -> VaultContext {
        let vault = try Vault.open(database: store.database, owner: store.principal.loginName)
        let guarded = try store.policyGuard(vaultUser: vault.owner)
        return VaultContext(store: store, vault: vault, custody: store.custody(vault), guarded: guarded)
    }

    /// Refuses (and audits) state edited outside touchgate; see ``PolicyGuard/requireIntactState()``.
    func requireIntactState() throws {
        try guarded.requireIntactState()
    }

    /// ``requireIntactState()``, reading the state under `key` with the same check.
    func requireIntactState(reading key: String) throws -> Data? {
        try guarded.requireIntactState(reading: key)
    }

    /// The vault key from the custody.
    /// - Throws: ``ServiceError/vaultLocked`` when it is not held.
    func requireKey() throws -> VaultKey {
        guard let key = try custody.currentKey() else { throw ServiceError.vaultLocked }
        return key
    }

    /// The print store with templates sealed under `key`.
    func printStore(key: VaultKey) throws -> PrintStore {
        PrintStore(database: database, sealing: try vault.templateSealing(key: key))
    }

    /// The vault key, to release item `name`; the refusal of a locked vault is audited.
    /// - Throws: ``ServiceError/vaultLocked`` when the key is not held.
    func keyForRelease(of name: String) throws -> VaultKey {
        guard let key = try custody.currentKey() else {
            try record(.itemRead, .denied, item: TouchgateService.storedName(name), reason: "vault locked")
            throw ServiceError.vaultLocked
        }
        return key
    }

    /// Runs `body`, which opens item `name`; an integrity failure it meets is audited
    /// (`integrity.failure`) before it is thrown on.
    func recordingIntegrity<T>(of name: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as VaultError {
            if case .integrity = error {
                try record(.integrityFailure, .error, item: name, reason: "item failed its integrity check")
            }
            throw error
        }
    }

    /// Appends one audit record for something the evaluator does not decide itself.
    func record(_ event: AuditEvent, _ outcome: AuditOutcome, item: String? = nil, reason: String) throws {
        try audit.append(event, outcome, vaultUser: vault.owner, item: item, reason: reason)
    }

    /// Checks the passphrase for an administrative change and audits every try.
    /// - Returns: the vault key it opened.
    /// - Throws: `VaultError.wrongPassphrase` after recording the failures.
    @discardableResult
    func checkPassphrase(_ interaction: any Interaction, purpose: String) async throws -> VaultKey {
        let recordWrong = { try self.record(.authAttempt, .failure, reason: "passphrase: wrong passphrase (\(purpose))") }
        do {
            let (_, key) = try await PassphraseEntry.open(vault, interaction: interaction, prompt: "Passphrase to \(purpose)",
                                                          wrong: { _ in try recordWrong() })
            try record(.authAttempt, .success, reason: "passphrase: passphrase verified (\(purpose))")
            return key
        } catch VaultError.wrongPassphrase {
            try recordWrong()
            throw VaultError.wrongPassphrase
        }
    }

    /// Checks passphrases for the evaluator; with `unlocking`, a correct one also gives
    /// the vault key to the custody.
    func verifier(_ interaction: any Interaction, unlocking: Bool = false) -> VaultPassphraseVerifier {
        let context = self
        return VaultPassphraseVerifier(vault: vault, interaction: interaction, custody: unlocking ? custody : nil) {
            try context.record(.authAttempt, .failure, reason: "passphrase: wrong passphrase (try again)")
        }
    }

    /// The live secrets an enroll or delete would destroy (`biometry-current-set`).
    func boundItems() throws -> [String] {
        try vault.items().filter { $0.enrollmentDigest != nil && !$0.isInvalidated }.map(\.name)
    }

    /// Before an enroll or delete: lists the secrets it would destroy and has the person
    /// confirm (refused without confirmation), then asks for the passphrase.
    func confirmAndAuthorize(_ change: EnrollmentChange, _ action: String, _ interaction: any Interaction) async throws {
        let bound = try boundItems()
        if !bound.isEmpty {
            let what = "\(bound.count) secret\(bound.count == 1 ? "" : "s") bound to the enrolled fingers "
                + "(biometry-current-set)"
            guard try await interaction.confirm("\(action) destroys \(what) for good. Continue?", details: bound) else {
                throw ServiceError(.declined, "not confirmed, so nothing was changed: \(action.lowercased()) would destroy "
                                   + "\(what): " + bound.map(StoredText.escaped).joined(separator: ", ")
                                   + " (\(TouchgateService.withoutTerminal))")
            }
        }
        try await authorizeEnrollmentChange(change, interaction)
    }

    /// Has the policy core authorize enrolling or deleting a finger: the passphrase is
    /// asked for and audited.
    func authorizeEnrollmentChange(_ change: EnrollmentChange, _ interaction: any Interaction) async throws {
        let verifier = verifier(interaction)
        do {
            _ = try await evaluator.authorizeEnrollmentChange(change, vaultExists: true, passphrase: verifier)
        } catch {
            throw verifier.explain(error)
        }
    }
}

/// The vault's passphrase check, as the policy core asks for it.
///
/// Asks the interaction for the passphrase (up to three tries at a terminal), runs
/// Argon2id and tries to open the vault key; only the verdict leaves. With a `custody`, a correct passphrase also hands the
/// key over (`touchgate unlock`). The policy core hears only "unavailable" when the
/// passphrase could not be asked; ``explain(_:)`` recovers the real cause for the message.
final class VaultPassphraseVerifier: PassphraseVerifier, Sendable {
    let vault: Vault
    let interaction: any Interaction
    let custody: (any KeyCustody)?
    // Why the passphrase could not be asked, only touched under its lock.
    private let problem = Mutex<(any Error)?>(nil)

    /// Records one wrong try that is not the last.
    let wrongTry: @Sendable () throws -> Void

    init(vault: Vault, interaction: any Interaction, custody: (any KeyCustody)?,
         wrongTry: @escaping @Sendable () throws -> Void) {
        self.vault = vault
        self.interaction = interaction
        self.custody = custody
        self.wrongTry = wrongTry
    }

    func verifyPassphrase(prompt: String) async throws(PassphraseEntryError) -> Bool {
        do {
            // Wrong tries before the last are recorded here; the policy core records the last.
            let (_, key) = try await PassphraseEntry.open(vault, interaction: interaction, prompt: prompt, wrong: { _ in
                try self.wrongTry()
            })
            try custody?.hold(key)
            return true
        } catch VaultError.wrongPassphrase {
            return false
        } catch is CancellationError {
            throw .cancelled
        } catch {
            problem.withLock { $0 = error }
            throw .unavailable
        }
    }

    /// The recorded cause behind `error` when it is a "passphrase required" refusal, else `error`.
    func explain(_ error: any Error) -> any Error {
        guard case .passphraseRequired? = error as? AuthorizationError else { return error }
        return problem.withLock { $0 } ?? error
    }
}
