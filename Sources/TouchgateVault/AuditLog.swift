public import FoundationEssentials
import Synchronization
import TouchgatePolicy

/// The tamper-evident audit trail (HIPAA 45 CFR 164.312(b) audit controls).
///
/// Every authentication, item access and configuration change is appended as one
/// ``AuditRecord``. Records form a chain: each record's MAC is keyed BLAKE2b-256 over
/// a canonical, length-prefixed encoding of all its fields and the previous record's
/// MAC (32 zero bytes for the first). A single `auditHead` row holds the last
/// record's sequence and MAC and the prune anchor, itself MACed, and is updated in the
/// same transaction as every append.
///
/// ## What the chain detects, and what it does not
/// The key is the random 32-byte file `audit.key` beside the database (see
/// ``keyPath``), not derived from the passphrase, because records are written while
/// the vault is locked. ``verify()`` therefore detects, by anyone who does not hold
/// that file (someone with a copy of the SQLite file, a backup, a DBA):
/// an edited field, a deleted record, an inserted or forged record, reordered records,
/// a removed tail (through the head row), and a tampered prune anchor.
/// It does **not** detect:
/// - anything done by someone who can read `audit.key`, including malware running as
///   the same user: they can recompute every MAC. A daemon owning the store under
///   another uid is the stronger boundary;
/// - the whole database (records and head together) replaced by an older genuine copy:
///   the database cannot witness its own past. The copy sent to journald
///   (``AuditJournal``), off-machine log shipping and backups are the witnesses for that.
///   A log wiped together with its head row (and key) is reported by ``init(database:journal:now:)``
///   once a vault exists; before that there is nothing to anchor it to.
///
/// ## Authenticated state
/// The head row also carries a digest of the state other layers keep in `vault_state`
/// (lockout counters, settings, the enrollment generation) and of the vault's
/// `templates_sealed` marker (``StateDigest``). ``StateStore`` checks it inside every
/// read and update, and ``verify()`` reports a mismatch, so a state edited with sqlite3,
/// or swapped for an older copy while newer records remain, is found.
///
/// ## Concurrency
/// Thread-safe; any number of instances and processes may append to one database.
/// Each append is one `BEGIN IMMEDIATE` transaction that reads the head and inserts the
/// next record, so SQLite serialises writers and the chain cannot fork; a writer waits
/// up to the database's busy timeout (10 s). Appends are durable (`synchronous=FULL`).
/// The journald copy is sent after the commit, best effort.
public final class AuditLog: Sendable {
    /// The fewest years records are kept before ``prune(before:keepingYears:evenUnshipped:vaultUser:)``
    /// may remove them (HIPAA 45 CFR 164.316(b)(2)(i)); nothing shortens it.
    public static let retentionYears = 6

    /// The database the log lives in.
    public let database: TouchgateDatabase
    /// Where the journald copy goes.
    public let journal: AuditJournal
    let key: AuditKey
    /// Signs the public chain's head (``AuditSeal``).
    let signer: AuditSigner
    let host: AuditHost
    let now: @Sendable () -> Date
    /// The seal this log signed last: found stored unchanged at the next append, it needs
    /// no signature check (it is this log's own signature; the check was a sixth of an
    /// append, made at every SSH signature of an agent). Shared by the instances
    /// ``opened(in:)`` makes over the same keys.
    let sealMemo: SealMemo

    /// The key file for the database at `location`: `audit.key` in its data directory.
    /// Back it up together with the database; without it the log cannot be verified.
    public static func keyPath(for location: StoreLocation) -> String {
        AuditKey.path(in: location)
    }

    /// This log's key file.
    public var keyPath: String { AuditKey.path(in: database.location) }

    /// Opens the audit log in `database`, creating the key file and the head on first use.
    ///
    /// Before any vault exists, a missing key file and head are created (mode 0600) while
    /// the log is empty; if the log has records and the key is gone, this throws rather
    /// than start a chain nobody can check. Once a vault exists (a `vault_meta` row), the
    /// log's existence is anchored: a missing key file, a missing head row, or a log
    /// whose records were all deleted is ``AuditError/wiped(detail:)``, never a fresh
    /// start; ``restart(database:journal:now:vaultUser:reason:)`` is the deliberate way
    /// to begin a new trail.
    ///
    /// A head written before the state was authenticated (format 1, no state digest) is
    /// upgraded here, once, when it is authentic and names the last record: it then
    /// covers the state as it is now (trust on first use: an edit made before the
    /// upgrade is adopted), and an `audit.upgrade` record says so. `now` is the wall clock
    /// (tests inject one); boot time always comes from `CLOCK_BOOTTIME`
    /// (``SystemClock/readBootTime()``).
    /// - Throws: ``AuditError/wiped(detail:)``, ``AuditError/keyMissing(path:)``,
    ///   ``AuditError/keyInvalid(path:detail:)``, ``StoreError/unsafePermissions(path:detail:)``
    ///   for a key file others can read, ``StoreError/io(path:detail:)``, or a GRDB `DatabaseError`.
    public convenience init(database: TouchgateDatabase, journal: AuditJournal = .system,
                            now: @escaping @Sendable () -> Date = { Date() }, checkingTPMCounter: Bool = true) throws {
        let path = AuditKey.path(in: database.location)
        let key: AuditKey
        if AuditKey.exists(at: path) {
            key = try AuditKey.load(path: path)
        } else {
            let (vaultExists, hasHistory) = try database.writer.read { db in
                (try MetaRecord.exists(db),
                 try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM audit) OR EXISTS (SELECT 1 FROM auditHead)") ?? false)
            }
            if AuditKey.exists(at: path) {
                // Another process opening the same new store created the key between the first
                // look and the read above: a key is always in place before anything it MACs is
                // written, so looking again after the read cannot miss a key that history needs.
                key = try AuditKey.load(path: path)
            } else if vaultExists {
                throw AuditError.wiped(detail: "the audit key \(path) is missing")
            } else if hasHistory {
                throw AuditError.keyMissing(path: path)
            } else {
                key = try AuditKey.create(path: path)
            }
        }
        let signerExisted = AuditSigner.exists(in: database.location)
        self.init(database: database, journal: journal, now: now, key: key,
                  signer: try AuditSigner.loadOrCreate(in: database.location))
        try prepareHead()
        try adoptLeftBehindKey()
        try prepareSeal(signerWasMissing: !signerExisted)
        // Without the check only to bind the store to a TPM again (recovery, repair).
        if checkingTPMCounter { try checkTPMCounter() }
    }

    /// The log of `database` as ``init(database:journal:now:)`` opens it, kept by a process
    /// that keeps the store open (touchgated, touchgate agent) while its key files stay the
    /// same ones: reading both keys and preparing the seal at every request was a fifth of an
    /// agent's signature. The head is still checked each time (a trail wiped meanwhile is
    /// reported as at the first open), and every read and write of the state checks it again.
    ///
    /// A new instance each time, over the kept keys: an instance names the requester it was
    /// made for (``AuditHost``) in every record it writes.
    public static func opened(in database: TouchgateDatabase) throws -> AuditLog {
        let keyFiles = [AuditKey.path(in: database.location), AuditSigner.path(in: database.location)]
            .map { FileIdentity(path: $0) }
        if let kept = database.snapshots.openedAudit.withLock({ $0 }), kept.keyFiles == keyFiles,
           !keyFiles.contains(nil) {
            let log = AuditLog(database: database, journal: .system, now: { Date() }, key: kept.key,
                               signer: kept.signer, sealMemo: kept.sealMemo)
            try log.prepareHead()
            try log.checkTPMCounter()
            return log
        }
        let log = try AuditLog(database: database)
        database.snapshots.openedAudit.withLock { $0 = (keyFiles, log.key, log.signer, log.sealMemo) }
        return log
    }

    /// A log over `database` MACed with `key` and sealed by `signer`, without any check
    /// (restart and repair).
    init(database: TouchgateDatabase, journal: AuditJournal, now: @escaping @Sendable () -> Date, key: AuditKey,
         signer: AuditSigner, sealMemo: SealMemo = SealMemo()) {
        self.sealMemo = sealMemo
        self.database = database
        self.journal = journal
        self.now = now
        self.host = AuditHost.of(database.client)
        self.key = key
        self.signer = signer
    }

    /// Creates the signing key file of the store at `location` if it is missing, so that a
    /// log opened there next does not take it for a lost key (see ``adoptSeal(_:)``).
    public static func prepareSigningKey(in location: StoreLocation) throws {
        _ = try AuditSigner.loadOrCreate(in: location)
    }

    /// The public key that signs this trail's seal: register it with a central verifier
    /// (`touchgate audit verify --public-key`, the fleet collector).
    public var publicKey: [UInt8] { signer.publicKey }

    /// Appends one record and returns it as stored.
    ///
    /// Works whether the vault is locked or not. If the chain was tampered with, the
    /// record is still written (building on the authentic head when there is one) and
    /// the damage stays visible to ``verify()``; an append never repairs evidence.
    /// - Throws: a GRDB `DatabaseError` when the database cannot be written (disk full,
    ///   busy for longer than the timeout).
    @discardableResult
    public func append(_ entry: AuditEntry) throws -> AuditRecord {
        let record = try database.writer.writeWithoutTransaction { db in
            var record: AuditRecord?
            try db.inTransaction(.immediate) {
                record = try insert(entry, db)
                return .commit
            }
            return record!
        }
        journal.send(record)
        syncTPMCounter()
        return record
    }

    /// Appends one record built from its parts; see ``append(_:)``.
    @discardableResult
    public func append(_ event: AuditEvent, _ outcome: AuditOutcome, vaultUser: String? = nil,
                       item: String? = nil, reason: String = "") throws -> AuditRecord {
        try append(AuditEntry(event: event, outcome: outcome, vaultUser: vaultUser, item: item, reason: reason))
    }

    /// `reason` with the client process a daemon served, e.g. `no match (via pid 42 /usr/bin/touchgate)`.
    static func reason(_ reason: String, via process: String) -> String {
        reason.isEmpty ? "via \(process)" : "\(reason) (via \(process))"
    }

    /// Inserts the next record inside the caller's write transaction.
    func insert(_ entry: AuditEntry, _ db: Database) throws -> AuditRecord {
        let storedHead = try AuditHead.fetch(db)
        let last = try Row.fetchOne(db, sql: "SELECT seq, mac FROM audit ORDER BY seq DESC LIMIT 1")
        let lastSequence: Int64 = last.flatMap { $0[0] as Int64? } ?? 0
        // An authentic head is built on, unless records exist beyond it: then it is an older
        // copy swapped back (with the state it authenticates), and moving it forward would
        // make that older state look current again. It stays as evidence.
        let head: AuditHead? = storedHead.flatMap { $0 }
            .flatMap { $0.isAuthentic(key: key) && $0.headSequence >= lastSequence ? $0 : nil }
        let storedHeadSequence = storedHead.flatMap { $0 }?.headSequence ?? 0
        let previousMAC: [UInt8]
        if let head {
            previousMAC = head.headMAC
        } else if let last, case let .blob(mac) = (last[1] as DatabaseValue) {
            previousMAC = Array(mac)
        } else {
            previousMAC = AuditMAC.genesis
        }
        let fields = AuditMAC.Fields(
            sequence: max(lastSequence, storedHeadSequence) + 1,
            unixTime: now().timeIntervalSince1970, bootTime: SystemClock.readBootTime().timeInterval,
            bootID: host.bootID, uid: Int64(host.uid), loginName: host.loginName,
            vaultUser: entry.vaultUser, event: entry.event.rawValue, item: entry.item,
            outcome: entry.outcome.rawValue, reason: host.via.map { Self.reason(entry.reason, via: $0) } ?? entry.reason,
            previousMAC: previousMAC)
        let mac = AuditMAC.record(fields, key: key)
        let (trail, previousChain, sealed) = try chainBase(db, before: fields.sequence)
        let chain = AuditSeal.link(trail: trail, previous: previousChain, fields: fields, mac: mac)
        try db.execute(sql: "INSERT INTO audit (\(Self.linkedColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", arguments: [fields.sequence, fields.unixTime, fields.bootTime, fields.bootID, fields.uid,
                                 fields.loginName, fields.vaultUser, fields.event, fields.item, fields.outcome,
                                 fields.reason, Data(fields.previousMAC), Data(mac), Data(previousChain), Data(chain)])
        if sealed {
            let seal = AuditSeal(trail: trail, sequence: fields.sequence, chain: chain, signer: signer)
            try seal.save(db)
            sealMemo.remember(seal)
        }
        if let head {
            // Only an authentic, current head moves forward (with the state digest it carries,
            // unchanged); a damaged, missing or swapped-back one stays as evidence.
            var advanced = head.advanced(to: fields.sequence, mac: mac, key: key)
            // A store bound to a TPM expects one more on its counter, authenticated with the
            // state; only over a state that checks out, so an edit is never blessed.
            if try StateStore.value(db, TPMBinding.counterStateKey) != nil, let digest = head.stateDigest,
               AuditMAC.equal(try StateDigest.compute(db), digest), try TPMCounter.advance(db) {
                advanced = advanced.with(stateDigest: try StateDigest.compute(db), key: key)
            }
            try advanced.save(db)
        }
        return Self.record(fields, mac: mac, links: (previousChain, chain))
    }
}

/// The seal an audit log signed last (``AuditLog/sealMemo``).
final class SealMemo: Sendable {
    private let seal = Mutex<AuditSeal?>(nil)

    func remember(_ signed: AuditSeal) {
        seal.withLock { $0 = signed }
    }

    /// Whether `stored` is the seal signed last, byte for byte.
    func isLastSigned(_ stored: AuditSeal) -> Bool {
        seal.withLock { $0 == stored }
    }
}
