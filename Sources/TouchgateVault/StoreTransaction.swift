public import FoundationEssentials
public import TouchgateBasics

extension AuditLog {
    /// Runs `body` as one transaction over the whole store, so that a change and the audit
    /// record that describes it are written together or not at all.
    ///
    /// One `BEGIN IMMEDIATE` transaction on the database's writer, committed durably
    /// (`synchronous = FULL`): a crash at any point leaves either everything `body` did or
    /// nothing. If `body` throws, everything it wrote (state, items, prints, passphrase,
    /// audit records) is rolled back and the error is rethrown. The journald copies of the
    /// records appended in `body` are sent after the commit, in order, and never for a
    /// rolled-back transaction.
    ///
    /// Other writers, in this process or others, wait (up to the busy timeout, 10 s) until
    /// the commit, so a read-modify-write inside `body` cannot lose an update. Keep `body`
    /// short: no Argon2id (use ``Vault/preparePassphraseChange(from:to:kdf:)`` before), no
    /// reader, no prompt. The handle is valid only inside `body`; never call another
    /// store API (``StateStore``, ``Vault``, ``PrintStore``, ``AuditLog``) from `body`:
    /// the database is not reentrant and such a call traps.
    public func atomically<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        let outcome = StoreTransaction.Outcome()
        let result: T, records: [AuditRecord]
        do {
            (result, records) = try database.writeImmediately { db in
                let transaction = StoreTransaction(db: db, log: self, outcome: outcome)
                defer { transaction.close() }
                let result = try body(transaction)
                return (result, transaction.records)
            }
        } catch {
            for undo in outcome.ifRolledBack { undo() }
            throw error
        }
        for record in records { journal.send(record) }
        syncTPMCounter()
        for action in outcome.ifCommitted { action() }
        return result
    }
}

/// The handle ``AuditLog/atomically(_:)`` gives its body: every write the store offers,
/// inside one transaction.
///
/// State operations are authenticated as in ``StateStore``: each checks the audit head
/// and the state digest first (``IntegrityError/stateTampered(detail:)`` otherwise) and
/// saves the new digest after. Appends carry the digest forward. Not thread-safe and not
/// `Sendable`: use it only on the thread running the body, and only during the body
/// (using it afterwards is a programmer error and traps).
public final class StoreTransaction {
    private let db: Database
    private let log: AuditLog
    /// The records appended so far, for the journal after the commit.
    private(set) var records: [AuditRecord] = []
    private var isOpen = true
    private let outcome: Outcome

    /// What to do outside the database once the transaction is over: TPM indices that
    /// the change made useless (after a commit) or that it would have used (after a
    /// rollback).
    final class Outcome {
        var ifCommitted: [() -> Void] = []
        var ifRolledBack: [() -> Void] = []
    }

    init(db: Database, log: AuditLog, outcome: Outcome) {
        self.db = db
        self.log = log
        self.outcome = outcome
    }

    func close() {
        isOpen = false
    }

    /// The database, checked to be still inside the body.
    private var database: Database {
        precondition(isOpen, "a StoreTransaction was used after its atomically body returned")
        return db
    }

    /// Traps when `other` is not the database this transaction writes (a programmer error).
    private func requireSameStore(_ other: TouchgateDatabase) {
        precondition(other.location == log.database.location,
                     "a StoreTransaction was given a vault or print store of another data directory")
    }

    // MARK: State

    /// The authenticated value under `key`, or `nil` (see ``StateStore/state(_:)``).
    /// - Throws: ``IntegrityError/stateTampered(detail:)``.
    public func state(_ key: String) throws -> Data? {
        let db = database
        _ = try log.requireAuthenticState(db)
        return try StateStore.value(db, key)
    }

    /// Reads, changes and writes back the value under `key`, and re-authenticates the
    /// state (see ``StateStore/updateState(_:_:)``). `body` setting the value to `nil`
    /// deletes it; if `body` throws, the whole transaction rolls back.
    /// - Throws: ``IntegrityError/stateTampered(detail:)`` before `body` runs when the
    ///   state was edited outside touchgate; whatever `body` throws.
    public func updateState<T>(_ key: String, _ body: (inout Data?) throws -> T) throws -> T {
        let db = database
        let head = try log.requireAuthenticState(db)
        let (result, changed) = try StateStore.update(db, key, body)
        // Unchanged, the saved digest (just checked against this head) still holds.
        if changed { try log.saveState(db, head: head) }
        return result
    }

    // MARK: Audit

    /// Appends one record (see ``AuditLog/append(_:)``); its journald copy goes after the commit.
    @discardableResult
    public func append(_ entry: AuditEntry) throws -> AuditRecord {
        let record = try log.insert(entry, database)
        records.append(record)
        return record
    }

    /// Appends one record built from its parts; see ``append(_:)``.
    @discardableResult
    public func append(_ event: AuditEvent, _ outcome: AuditOutcome, vaultUser: String? = nil,
                       item: String? = nil, reason: String = "") throws -> AuditRecord {
        try append(AuditEntry(event: event, outcome: outcome, vaultUser: vaultUser, item: item, reason: reason))
    }

    // MARK: Items

    /// The item `name` of `vault`'s owner as a listing shows it, with its current
    /// ``VaultItemInfo/version``, or `nil`.
    public func itemInfo(named name: String, in vault: Vault) throws -> VaultItemInfo? {
        requireSameStore(vault.database)
        return try vault.itemInfo(database, named: name)
    }

    /// What `vault`'s owner stores now, leaving out the item named `excluded` (one about to
    /// be replaced), read in this transaction.
    public func itemUsage(in vault: Vault, excluding excluded: String? = nil) throws -> ItemUsage {
        requireSameStore(vault.database)
        return try vault.usage(database, excluding: excluded)
    }

    /// Stores an item, compare-and-swap (see ``Vault/setItem(named:value:policy:freshTouch:enrollmentDigest:key:expecting:)``).
    /// - Returns: the item's new version.
    /// - Throws: ``ConflictError/itemChanged(name:)`` when `expecting` does not hold.
    @discardableResult
    public func setItem(named name: String, value: SecretBytes, kind: ItemKind = .secret, policy: String, freshTouch: Bool,
                        enrollmentDigest: [UInt8]?, details: String? = nil, key: VaultKey, expecting: ItemExpectation,
                        in vault: Vault) throws -> ItemVersion {
        requireSameStore(vault.database)
        return try changingAuthenticatedState { db in
            try vault.setItem(db, named: name, value: value, kind: kind, policy: policy, freshTouch: freshTouch,
                              enrollmentDigest: enrollmentDigest, details: details, key: key, expecting: expecting)
        }
    }

    /// Deletes the item `name` (see ``Vault/deleteItem(named:expecting:)``); returns whether it existed.
    @discardableResult
    public func deleteItem(named name: String, expecting: ItemExpectation = .any, in vault: Vault) throws -> Bool {
        requireSameStore(vault.database)
        return try changingAuthenticatedState { db in try vault.deleteItem(db, named: name, expecting: expecting) }
    }

    /// Destroys the keys of items bound to another enrollment state
    /// (see ``Vault/destroyKeys(currentEnrollmentDigest:)``); returns their names.
    @discardableResult
    public func destroyKeys(currentEnrollmentDigest: [UInt8], in vault: Vault) throws -> [String] {
        requireSameStore(vault.database)
        return try changingAuthenticatedState { db in
            try Vault.destroyKeys(db, currentEnrollmentDigest: currentEnrollmentDigest)
        }
    }

    // MARK: Prints

    /// Stores a print through `prints`' sealing (see ``PrintStore/save(_:replace:)``).
    /// - Throws: ``StoreError/alreadyEnrolled(user:finger:)`` without `replace` when one is stored.
    public func save(_ print: StoredPrint, replace: Bool, in prints: PrintStore) throws {
        requireSameStore(prints.database)
        try changingAuthenticatedState { db in try prints.save(db, print, replace: replace) }
    }

    /// The stored prints as `prints` reads them (its sealing opens the templates; a sealing
    /// that withholds them gives a listing), as this transaction sees them: after its own
    /// saves and deletions, so the new enrollment state can be computed before it commits.
    public func prints(in prints: PrintStore, user: String? = nil, finger: String? = nil,
                       driver: String? = nil, deviceID: String? = nil) throws -> [StoredPrint] {
        requireSameStore(prints.database)
        return try prints.prints(database, user: user, finger: finger, driver: driver, deviceID: deviceID)
    }

    /// Deletes the print for this key; returns whether one was there.
    @discardableResult
    public func deletePrint(user: String, finger: String, driver: String, deviceID: String) throws -> Bool {
        try changingAuthenticatedState { db in
            try PrintStore.delete(db, user: user, finger: finger, driver: driver, deviceID: deviceID)
        }
    }

    /// Deletes every print made on one reader; returns how many.
    @discardableResult
    public func deleteAllPrints(driver: String, deviceID: String) throws -> Int {
        try changingAuthenticatedState { db in try PrintStore.deleteAll(db, driver: driver, deviceID: deviceID) }
    }

    // MARK: Passphrase

    /// Stores a passphrase change prepared with ``Vault/preparePassphraseChange(from:to:kdf:)``.
    /// - Throws: ``VaultError/wrongPassphrase`` when the passphrase was changed since
    ///   (compare-and-swap on the wrapped vault key).
    public func changePassphrase(_ change: PassphraseChange, in vault: Vault) throws {
        requireSameStore(vault.database)
        if let guards = change.guards {
            let device = TPMDevice.configured
            outcome.ifRolledBack.append { try? device.removeIndex(guards.new) }
            if let retired = guards.retired { outcome.ifCommitted.append { try? device.removeIndex(retired) } }
        }
        try changingAuthenticatedState { db in try vault.apply(db, change) }
    }

    /// Runs `body`, a write of something the state digest covers (items, prints, the
    /// passphrase wrapping), between the check of the authenticated state and the save of its new
    /// digest: a store edited outside touchgate is refused before anything is written,
    /// and what `body` writes is authenticated with the rest.
    /// - Throws: ``IntegrityError/stateTampered(detail:)`` before `body` runs.
    func changingAuthenticatedState<T>(_ body: (Database) throws -> T) throws -> T {
        let db = database
        let head = try log.requireAuthenticState(db)
        let result = try body(db)
        try log.saveState(db, head: head)
        return result
    }
}
