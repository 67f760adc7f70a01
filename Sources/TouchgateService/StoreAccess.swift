import FoundationEssentials
import TouchgatePolicy
import TouchgateVault

/// One principal's data directory, opened for one request.
///
/// Before `touchgate init` templates are stored in the clear; once a vault exists they
/// are sealed under a key derived from the vault key, so reading a template needs the
/// key held by the custody.
struct StoreAccess: Sendable {
    let database: TouchgateDatabase
    let principal: Principal
    let custody: @Sendable (Vault) -> any KeyCustody
    /// The source of time for the policy core's decisions.
    let clock: any PolicyClock
    /// Whether the database stays open after the request (touchgated's ``OpenStores``), so
    /// that what is read from it may be kept until it changes.
    var keepsSnapshots = false
    /// What preparing the store for this request found (where the store stays open): its
    /// directory, database file and write-ahead log, which stamp its snapshots.
    var prepared: StoreLocation.PreparedFiles?

    /// What `make` reads from the store: kept until the store changes where the store stays
    /// open (``StoreSnapshots``), read afresh otherwise. Only for what a request shows,
    /// never for what it decides.
    /// `stamp`, from ``snapshotStamp()``, serves several snapshots of one request.
    func snapshot<T: Sendable>(_ name: String, at stamp: StoreSnapshots.Stamp? = nil,
                               _ make: () throws -> T) throws -> T {
        keepsSnapshots ? try database.snapshots.value(name, at: stamp, make) : try make()
    }

    /// The store's stamp now, for several ``snapshot(_:at:_:)`` calls of one request (nil
    /// where nothing is kept).
    func snapshotStamp() throws -> StoreSnapshots.Stamp? {
        keepsSnapshots ? try database.snapshots.stamp(prepared: prepared) : nil
    }

    /// What ``snapshot(_:_:)`` last kept under `name`, even if the store changed since: a
    /// hint the caller checks against the store (nil where nothing is kept).
    func lastSnapshot<T: Sendable>(_ name: String, as type: T.Type = T.self) -> T? {
        keepsSnapshots ? database.snapshots.lastKept(name) : nil
    }

    /// Keeps `value` under `name` for ``lastSnapshot(_:as:)`` (nowhere where the store does
    /// not stay open).
    func keep<T: Sendable>(_ name: String, _ value: T) {
        if keepsSnapshots { database.snapshots.keep(name, value) }
    }

    /// Whether `touchgate init` has run.
    func vaultExists() throws -> Bool {
        try Vault.exists(in: database)
    }

    /// The vault with its custody, audit log, settings and evaluator.
    /// - Throws: `VaultError.notInitialized` without a vault.
    func vault() throws -> VaultContext {
        try VaultContext.open(self)
    }

    /// The vault when one exists, else nil.
    func vaultIfPresent() throws -> VaultContext? {
        try vaultExists() ? vault() : nil
    }

    /// The audit log, the authenticated state, the settings and an evaluator over them:
    /// what every decision needs, with or without a vault.
    func policyGuard(vaultUser: String?) throws -> PolicyGuard {
        let audit = try auditLog()
        let stateStore = StateStore(log: audit)
        let settings = PolicySettings.loadOrDefaults(stateStore)
        let evaluator = AccessEvaluator(
            configuration: settings.configurationOrDefaults, clock: clock,
            store: VaultPolicyStateStore(store: stateStore, vaultUser: vaultUser),
            auditSink: VaultAuditSink(log: audit, vaultUser: vaultUser), principal: principal.description)
        return PolicyGuard(audit: audit, stateStore: stateStore, settings: settings, evaluator: evaluator,
                           vaultUser: vaultUser)
    }

    /// The audit log, for changes made in one transaction with their records.
    func audit() throws -> AuditLog {
        try auditLog()
    }

    /// Opened once and kept where the store stays open (``AuditLog/opened(in:)``).
    private func auditLog() throws -> AuditLog {
        keepsSnapshots ? try AuditLog.opened(in: database) : try AuditLog(database: database)
    }

    /// Names, fingers and readers of the stored prints, never templates (works while locked).
    func printIndex() -> PrintStore {
        PrintStore(database: database, sealing: TemplatesWithheld())
    }

    /// The prints with their templates: plaintext before a vault exists, sealed after.
    /// - Throws: ``ServiceError/vaultLocked`` when a vault exists and its key is not held.
    func printStore() throws -> PrintStore {
        guard let context = try vaultIfPresent() else { return PrintStore(database: database) }
        return try context.printStore(key: context.requireKey())
    }
}

/// A sealing that never yields a template: listings need only the other columns.
struct TemplatesWithheld: TemplateSealing {
    struct Refused: Error {}

    func seal(_ template: [UInt8], context: String) throws -> [UInt8] { throw Refused() }
    func open(_ stored: [UInt8], context: String) throws -> [UInt8] { [] }
}

/// What guards every decision: the audit log, the authenticated state, the settings in
/// force and the policy core's evaluator wired to them.
struct PolicyGuard: Sendable {
    let audit: AuditLog
    let stateStore: StateStore
    let settings: PolicySettings
    let evaluator: AccessEvaluator
    let vaultUser: String?

    /// Before any decision: the authenticated state must check out. Edited, removed or
    /// swapped-back state is audited (`integrity.failure`) and refused as tampering, which
    /// leaves every touch refused until `touchgate repair`: the most restrictive state.
    func requireIntactState() throws {
        _ = try requireIntactState(reading: nil)
    }

    /// ``requireIntactState()``, reading the state under `key` with the same check.
    func requireIntactState(reading key: String?) throws -> Data? {
        do {
            return try stateStore.states([VaultPolicyStateStore.stateKey] + (key.map { [$0] } ?? []))[key ?? ""]
        } catch let error as IntegrityError {
            _ = try? audit.append(.integrityFailure, .error, vaultUser: vaultUser, reason: error.description)
            throw error
        }
    }

    /// The same evaluator, deciding inside `transaction`: its state changes and records
    /// commit or roll back with the transaction.
    func evaluator(in transaction: StoreTransaction) -> AccessEvaluator {
        let handle = TransactionHandle(handle: transaction)
        return AccessEvaluator(
            configuration: evaluator.configuration, clock: evaluator.clock,
            store: VaultPolicyStateStore(transaction: handle),
            auditSink: VaultAuditSink(transaction: handle, vaultUser: vaultUser), principal: evaluator.principal)
    }
}
