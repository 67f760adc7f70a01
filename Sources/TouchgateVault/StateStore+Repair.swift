public import FoundationEssentials

/// The authenticated state as stored, read without checking it (``StateStore/unverifiedState()``).
public struct UnverifiedState: Sendable, Equatable {
    /// Every `vault_state` value by key, exactly as stored. A key or value a hand edit
    /// stored as another SQLite type is given as its text (or, for a blob key, its UTF-8
    /// decoding).
    public var values: [String: Data]
    /// The vault's `templates_sealed` marker, or `nil` when there is no vault.
    public var templatesSealed: Bool?
    /// What the integrity check finds wrong (as in ``IntegrityError/stateTampered(detail:)``),
    /// or `nil` when the state is the one touchgate last wrote.
    public var problem: String?
}

/// What ``StateStore/reseal(_:templatesSealed:recording:)`` did.
public struct StateResealing: Sendable, Equatable {
    /// Whether the audit head was missing, damaged or did not name the last record, and a
    /// fresh head was written at the current last record (the audit record should say so).
    public var headRebuilt: Bool
    /// What the integrity check found wrong before the reseal, or `nil` if nothing was.
    public var problem: String?
}

extension StateStore {
    /// The state as stored, without the integrity check, and what the check finds: for
    /// the repair command to show and decide. Never use these values to decide anything
    /// else: they may have been edited outside touchgate.
    ///
    /// Needs the audit key only for ``UnverifiedState/problem``; without a key file it
    /// reads the values anyway and says the key is missing.
    public func unverifiedState() throws -> UnverifiedState {
        let key = try repairKey()
        return try database.writer.read { db in
            var values: [String: Data] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM vault_state") {
                values[Self.text(row[0])] = Self.bytes(row[1])
            }
            let marker = try Row.fetchOne(db, sql: "SELECT templates_sealed FROM vault_meta WHERE id = 1")
                .map { row -> Bool in
                    if case let .int64(number) = (row[0] as DatabaseValue) { return number != 0 }
                    return false
                }
            let problem = try key.map { try AuditLog.checkState(db, key: $0).problem }
                ?? "the audit key \(AuditKey.path(in: database.location)) is missing"
            return UnverifiedState(values: values, templatesSealed: marker, problem: problem)
        }
    }

    /// Replaces the whole state with `values` (and the vault's marker with
    /// `templatesSealed`, unless `nil`), and authenticates it anew; for the repair command,
    /// which decides the values (this only provides the mechanism).
    ///
    /// Works whatever the check would say: when a trigger was added (every trigger is
    /// dropped first: touchgate defines none), and when the audit head is missing,
    /// malformed, forged or does not name the last record: a fresh authentic head is then
    /// written at the current last record (keeping the anchor of a head that is still
    /// authentic, otherwise linking to the first stored record), and
    /// ``StateResealing/headRebuilt`` is set. `recording` is called inside the transaction
    /// with that outcome; the entry it returns (say, `integrity.failure` naming what was
    /// repaired) is appended in the same transaction, so the repair and its record are
    /// written together. Records are not checked or changed: run ``AuditLog/verify()``
    /// after. Passing `false` for `templatesSealed` is always safe: sealing decides per
    /// template, so the next ``Vault/templateSealing(key:)`` seals only what is plaintext.
    /// - Throws: ``AuditError/keyMissing(path:)`` when there is no key file (start a new
    ///   trail with ``AuditLog/restart(database:journal:now:vaultUser:reason:)`` first),
    ///   ``VaultError/notInitialized(directory:)`` for a marker without a vault, GRDB errors.
    @discardableResult
    public func reseal(_ values: [String: Data], templatesSealed: Bool? = nil,
                       recording: (StateResealing) -> AuditEntry? = { _ in nil }) throws -> StateResealing {
        guard let key = try repairKey() else { throw AuditError.keyMissing(path: AuditKey.path(in: database.location)) }
        let signer = try AuditSigner.loadOrCreate(in: database.location)
        let writer = fixedLog.map { AuditLog(database: database, journal: $0.journal, now: $0.now, key: key, signer: signer) }
            ?? AuditLog(database: database, journal: .system, now: { Date() }, key: key, signer: signer)
        let directory = database.location.directory.path
        let (outcome, record) = try database.writeImmediately { db in
            try Self.reseal(db, values, templatesSealed: templatesSealed, key: key, writer: writer,
                            directory: directory, recording: recording)
        }
        if let record { writer.journal.send(record) }
        return outcome
    }

    /// The reseal itself, inside the caller's transaction.
    private static func reseal(_ db: Database, _ values: [String: Data], templatesSealed: Bool?, key: AuditKey,
                               writer: AuditLog, directory: String,
                               recording: (StateResealing) -> AuditEntry?) throws -> (StateResealing, AuditRecord?) {
        let check = try AuditLog.checkState(db, key: key)
        // Touchgate has no trigger: one found is tampering and would run inside the writes below.
        for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'") {
            try db.execute(sql: "DROP TRIGGER \(name.quotedDatabaseIdentifier)")
        }
        var head: AuditHead
        var rebuilt = false
        if let authentic = check.authenticHead, try AuditLog.lastRecordProblem(db, head: authentic) == nil {
            head = authentic
        } else {
            head = try freshHead(db, authentic: check.authenticHead, key: key)
            rebuilt = true
        }
        try db.execute(sql: "DELETE FROM vault_state")
        let now = Date().timeIntervalSince1970
        for (name, value) in values {
            try db.execute(sql: "INSERT INTO vault_state (key, value, updated_at) VALUES (?, ?, ?)",
                           arguments: [name, value, now])
        }
        if let templatesSealed {
            guard try MetaRecord.exists(db) else { throw VaultError.notInitialized(directory: directory) }
            try db.execute(sql: "UPDATE vault_meta SET templates_sealed = ? WHERE id = 1", arguments: [templatesSealed])
        }
        head = head.with(stateDigest: try StateDigest.compute(db), key: key)
        try head.save(db)
        let outcome = StateResealing(headRebuilt: rebuilt, problem: check.problem)
        var record: AuditRecord?
        if let entry = recording(outcome) {
            record = try writer.insert(entry, db)
        }
        return (outcome, record)
    }

    /// The key to check and reseal with: the log's, or the key file read without the
    /// checks of opening a log (which refuse a damaged trail); `nil` when there is no file.
    private func repairKey() throws -> AuditKey? {
        if let fixedLog { return fixedLog.key }
        let path = AuditKey.path(in: database.location)
        return AuditKey.exists(at: path) ? try AuditKey.load(path: path) : nil
    }

    /// A head at the last stored record (format 2; the caller sets the digest).
    private static func freshHead(_ db: Database, authentic: AuditHead?, key: AuditKey) throws -> AuditHead {
        guard let last = try Row.fetchOne(db, sql: "SELECT seq, mac FROM audit ORDER BY seq DESC LIMIT 1") else {
            // No records: continue after the authentic head's last record, or from the start.
            let sequence = authentic?.headSequence ?? 0
            let mac = authentic?.headMAC ?? AuditMAC.genesis
            return AuditHead(headSequence: sequence, headMAC: mac, anchorSequence: sequence, anchorMAC: mac,
                             stateDigest: [], key: key)
        }
        let anchorSequence: Int64, anchorMAC: [UInt8]
        if let authentic {
            (anchorSequence, anchorMAC) = (authentic.anchorSequence, authentic.anchorMAC)
        } else {
            let first = try Row.fetchOne(db, sql: "SELECT seq, prevMAC FROM audit ORDER BY seq LIMIT 1")!
            anchorSequence = (first[0] as Int64) - 1
            anchorMAC = bytes(first[1]).map { Array($0) } ?? AuditMAC.genesis
        }
        return AuditHead(headSequence: last[0], headMAC: Array(bytes(last[1]) ?? Data()),
                         anchorSequence: anchorSequence, anchorMAC: anchorMAC, stateDigest: [], key: key)
    }

    private static func text(_ value: DatabaseValue) -> String {
        switch value {
        case .null: return ""
        case let .int64(number): return String(number)
        case let .double(number): return String(number)
        case let .string(text): return text
        case let .blob(bytes): return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func bytes(_ value: DatabaseValue) -> Data? {
        switch value {
        case .null: return nil
        case let .blob(bytes): return bytes
        default: return Data(text(value).utf8)
        }
    }
}
