public import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import TouchgateBasics
import TouchgatePolicy

/// The TPM counter of a vault bound to a TPM (``TPMBinding``), which makes an older copy
/// of the store detectable even to root or offline.
///
/// The store keeps the value it expects (`vault.tpm-counter`, authenticated with the rest
/// of the state). Every append moves it one forward inside its transaction
/// (``TPMCounter/advance(_:)``); after the commit the TPM's counter is brought up to it
/// (``syncTPMCounter()``). Opening the log compares the two (``checkTPMCounter()``):
/// - equal: the store is the newest;
/// - the store ahead: a process stopped between its commit and the increment (kill -9,
///   a crash), and the increments are made now;
/// - the store behind: an older copy was put back (the whole directory, the database, or
///   its WAL cut), refused with ``IntegrityError/rolledBack(detail:)``, with one
///   exception, a power loss (``PowerLoss``): right after a TPM boot that did not follow
///   an orderly shutdown, an orderly (hybrid) counter stands past every value it may have
///   had, so the store adopts it, with an audit record saying so — only while the
///   counter has not moved since that boot, and only when the store is no older than the
///   TPM's last save of it.
///
/// The TPM must be the one the vault was bound to: its storage key's name is compared
/// with the binding's once per process and TPM (``TPMIdentityMemo``), so a software TPM
/// started to stand in for it, with a counter at the same index raised to an older
/// copy's value, is refused.
/// Both steps run under an exclusive lock on `tpm.lock` in the data directory, so two
/// processes never increment past the store's value between them.
extension AuditLog {
    /// The authorization of the store's NV counter, derived from `audit.key`: whoever may
    /// append to the trail may move it, nobody else.
    var tpmCounterAuth: SecretBytes {
        SecretBytes(copying: key.mac(Array("touchgate/tpm-counter/v1".utf8)))
    }

    /// The binding and the value the store expects, when the store is bound.
    private func counterState() throws -> (TPMBinding, UInt64)? {
        try database.writer.read { db in
            guard let meta = try MetaRecord.fetch(db), let binding = meta.tpm,
                  let stored = try StateStore.value(db, TPMBinding.counterStateKey),
                  let value = TPMCounter.decode(stored) else { return nil }
            return (binding, value)
        }
    }

    /// Runs `body` holding the data directory's TPM lock.
    private func withTPMLock<T>(_ body: () throws -> T) throws -> T {
        let path = database.location.directory.appendingPathComponent("tpm.lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
        }
        return try body()
    }

    /// After a commit: increments the TPM's counter up to the store's value. Best effort: a
    /// TPM that cannot be reached now leaves the store ahead, which the next open repairs.
    ///
    /// A counter found past the store here is a TPM that lost power while this process
    /// kept the store open (a long-running touchgated): it gets the check an open would
    /// give, at once, so the adoption is recorded and the counter moves on from where the
    /// unclean boot put it. Left alone, the counter would stay there, ahead of the store,
    /// for hundreds of changes, and every copy put back meanwhile would pass as that power
    /// loss.
    func syncTPMCounter() {
        guard let (binding, expected) = try? counterState(),
              expected > TPMCounterMemo.highest(binding.counter, on: TPMDevice.configured) else { return }
        let auth = tpmCounterAuth, device = TPMDevice.configured
        let ahead = (try? withTPMLock { () throws -> Bool in
            guard let (_, expected) = try counterState() else { return false }
            let value = try device.counter(binding.counter, auth: auth, advancingTo: expected)
            TPMCounterMemo.saw(value, index: binding.counter, on: device)
            return value > expected
        }) ?? false
        if ahead { try? checkTPMCounter() }
    }

    /// Opening the log: the store must not be older than the TPM's counter says.
    /// - Throws: ``IntegrityError/rolledBack(detail:)`` for a rolled-back store (after a
    ///   journald record), ``VaultError/tpm(_:)`` when the TPM cannot be reached.
    func checkTPMCounter() throws {
        guard let (binding, _) = try counterState() else { return }
        let auth = tpmCounterAuth, device = TPMDevice.configured
        let jump: (from: UInt64, to: UInt64)? = try withTPMLock { () throws -> (from: UInt64, to: UInt64)? in
            guard let (_, expected) = try counterState() else { return nil }
            // Read, and brought up to the store when it is behind (a commit whose increment
            // never happened): one call. Beyond the store is what needs a reason.
            try requireBoundTPM(binding, device: device)
            let value = try Self.counterCall { try device.counter(binding.counter, auth: auth, advancingTo: expected) }
            TPMCounterMemo.saw(value, index: binding.counter, on: device)
            if value == expected { return nil }
            let boot = try Vault.tpm { try device.bootInfo() }
            guard PowerLoss(boot: boot, counter: value).explains(expected: expected) else {
                let detail = "the store is older than the TPM's counter says (it expects \(expected), the TPM is at \(value)): an older copy of it was put back, or its WAL file was cut. Restore the newest copy of the data directory; to accept this one, run `touchgate repair` with the passphrase"
                journal.send(Self.record(AuditMAC.Fields(
                    sequence: 0, unixTime: now().timeIntervalSince1970, bootTime: SystemClock.readBootTime().timeInterval,
                    bootID: host.bootID, uid: Int64(host.uid), loginName: host.loginName, vaultUser: nil,
                    event: AuditEvent.tpmCounter.rawValue, item: nil, outcome: AuditOutcome.denied.rawValue,
                    reason: "refused a rolled-back store: \(detail)", previousMAC: AuditMAC.genesis),
                    mac: AuditMAC.genesis, links: (AuditMAC.genesis, AuditMAC.genesis)))
                throw IntegrityError.rolledBack(detail: detail)
            }
            try adoptTPMCounter(value, afterPowerLossFrom: expected)
            return (expected, value)
        }
        if let jump {
            try append(.tpmCounter, .success, reason: "the TPM's counter was \(jump.to - jump.from) ahead of the store (\(jump.from) → \(jump.to)) after a power loss (the TPM's boot was not orderly and its counter had not moved since): adopted")
        }
    }

    /// Where the store keeps its newest power-loss adoption (when, and how many changes):
    /// one authenticated row, so that `status` reads it without searching the trail.
    static let adoptionStateKey = "vault.tpm-adopted"

    /// The TPM must be the one the binding names (when it names one): its storage key's
    /// name, compared once per process and TPM.
    /// - Throws: ``VaultError/tpm(_:)`` naming both.
    private func requireBoundTPM(_ binding: TPMBinding, device: TPMDevice) throws {
        guard let expected = binding.tpmName, !TPMIdentityMemo.verified(expected, on: device) else { return }
        let actual = try Vault.tpm { try device.identity() }
        guard actual == expected else {
            throw VaultError.tpm("\(device.name) is not the TPM this vault is bound to (its storage key differs: another TPM, a software one, or this one cleared); point TOUCHGATE_TPM_TCTI at the TPM the vault was bound to, or, if that TPM is gone, bind the vault to this one with `touchgate tpm recover` and the recovery key")
        }
        TPMIdentityMemo.verify(expected, on: device)
    }

    /// The newest adoption of the TPM's counter after a power loss: when, and by how many
    /// changes (its `tpm.counter` record says the same in words).
    func lastCounterAdoption() throws -> (time: Date, changes: UInt64)? {
        let stored = try database.writer.read { db in try StateStore.value(db, Self.adoptionStateKey) }
        guard let stored, stored.count == 16, let seconds = TPMCounter.decode(stored.prefix(8)),
              let changes = TPMCounter.decode(stored.suffix(8)) else { return nil }
        return (Date(timeIntervalSince1970: Double(bitPattern: seconds)), changes)
    }

    /// The state entry that makes the store expect the TPM's counter as it is now, for
    /// ``StateStore/reseal(_:templatesSealed:recording:)`` (`touchgate repair` keeps the
    /// binding with it); `nil` when the store is not bound to a TPM. The encoding stays
    /// ``TPMCounter``'s.
    /// - Throws: ``VaultError/tpm(_:)`` when the TPM cannot be reached.
    public func currentTPMCounterState() throws -> (key: String, value: Data)? {
        let binding = try database.writer.read { db in try MetaRecord.fetch(db)?.tpm }
        guard let binding else { return nil }
        let value = try Self.counterCall { try TPMDevice.configured.counter(binding.counter, auth: tpmCounterAuth) }
        return (TPMBinding.counterStateKey, TPMCounter.encode(value))
    }

    /// A call on the counter, its errors as ``Vault/tpm(_:)`` says, except a refused key:
    /// that is not a wrong passphrase but an `audit.key` other than the one the counter
    /// was made with (a restored or restarted trail).
    static func counterCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch TPMError.wrongAuth {
            throw VaultError.tpm("the TPM refused this store's counter key: audit.key is not the one the vault was bound to the TPM with (a trail restarted or its key restored from elsewhere); put the matching audit.key back, or bind the vault again with `touchgate tpm recover` and the recovery key")
        } catch let error as TPMError {
            return try Vault.tpm { throw error }
        }
    }

    /// Sets the store's expected value to `value`, a power loss's jump from `expected`, and
    /// keeps when that was and how far.
    func adoptTPMCounter(_ value: UInt64, afterPowerLossFrom expected: UInt64) throws {
        let at = now().timeIntervalSince1970.bitPattern
        try database.writeImmediately { db in
            let head = try requireAuthenticState(db)
            _ = try StateStore.update(db, TPMBinding.counterStateKey) { $0 = TPMCounter.encode(value) }
            _ = try StateStore.update(db, Self.adoptionStateKey) {
                $0 = TPMCounter.encode(at) + TPMCounter.encode(value - expected)
            }
            try saveState(db, head: head)
        }
    }
}

/// When a counter ahead of the store is a power loss's doing, not an older copy's.
///
/// An orderly (hybrid) counter lives in the TPM's RAM and is saved to NV each time its
/// low bits wrap (every `orderlyCount + 1` increments) and at an orderly shutdown. After a
/// TPM boot that followed no orderly shutdown, the TPM sets it to its last saved value
/// with the low bits all ones (`saved | orderlyCount`, TPM 2.0 reference code,
/// `NvEntityStartup`), past anything it may have returned. So:
/// - the boot must not be orderly;
/// - the counter must still stand where that boot put it (its low bits all ones): the
///   first increment since (the adoption's own audit record, or any change) saves it
///   and ends the exception, so a copy put back later is refused;
/// - the store must expect at least the saved value (`counter - orderlyCount`): the TPM
///   never loses a saved value, so only the changes after it may have been lost.
/// A root who restarts the TPM uncleanly and puts a copy back before the store is next
/// opened can still roll back those few changes; SECURITY.md says so.
struct PowerLoss {
    let boot: TPMBootInfo
    let counter: UInt64

    func explains(expected: UInt64) -> Bool {
        let span = boot.orderlyCount
        guard !boot.orderly, span > 0, span < UInt64.max, counter > expected else { return false }
        let untouchedSinceBoot = counter % (span + 1) == span
        return untouchedSinceBoot && counter - expected <= span
    }
}

/// The TPMs whose storage key this process has compared with a binding's and found
/// equal, by TCTI: the name does not change while the TPM is not cleared, and the
/// comparison costs a TPM2_CreatePrimary.
enum TPMIdentityMemo {
    private static let verifiedNames = Mutex<[String: [UInt8]]>([:])

    static func verified(_ name: [UInt8], on device: TPMDevice) -> Bool {
        verifiedNames.withLock { $0[device.tcti ?? ""] == name }
    }

    static func verify(_ name: [UInt8], on device: TPMDevice) {
        verifiedNames.withLock { $0[device.tcti ?? ""] = name }
    }
}

/// The highest value this process has seen each counter at. A counter never goes down, so
/// a store expecting no more than that needs no increment: the sync after a commit skips
/// the TPM then (the check at open never does: it must see the TPM's value now).
enum TPMCounterMemo {
    /// By TPM (its TCTI) and NV index.
    private static let highestSeen = Mutex<[String: UInt64]>([:])

    static func saw(_ value: UInt64, index: UInt32, on device: TPMDevice) {
        highestSeen.withLock { $0[key(index, device)] = max($0[key(index, device)] ?? 0, value) }
    }

    static func highest(_ index: UInt32, on device: TPMDevice) -> UInt64 {
        highestSeen.withLock { $0[key(index, device)] ?? 0 }
    }

    private static func key(_ index: UInt32, _ device: TPMDevice) -> String {
        "\(device.tcti ?? "")#\(index)"
    }
}

/// What `touchgate tpm recover` accepts when it binds a vault again: the store as it is
/// now, set beside what vouches for a newer state (the TPM's counter when it is still
/// there, the fleet collector's confirmations, a seal the owner exported earlier), so
/// that a rollback hidden behind a lost counter is named before anyone accepts it.
public struct TPMRecoveryState: Sendable {
    /// The store's newest record: its sequence, time and event (nil for an empty trail).
    public var newest: (sequence: Int64, time: Date, event: String)?
    /// The counter value the store expects, and the TPM's (nil: gone or unreachable, with why).
    public var storeCounter: UInt64?
    public var tpmCounter: UInt64?
    public var counterProblem: String?
    /// The last record the fleet collector confirmed, as this store remembers it (0: none).
    public var shippedThrough: Int64
    /// What an exported seal says of this store, when one was given.
    public var checkpoint: CheckpointFinding?

    public enum CheckpointFinding: Sendable, Equatable {
        /// The seal is not this trail's, or not signed by its key.
        case foreign
        /// The store holds the sealed record, with the same link: at least as new.
        case holds(sequence: Int64)
        /// The store has the sealed record's sequence but another record there: a fork.
        case differs(sequence: Int64)
        /// The store ends before the sealed record: older than the export (a rollback).
        case older(sequence: Int64)
    }

    /// Whether something outside the store shows it is older than it was.
    public var isRollback: Bool {
        switch checkpoint {
        case .older?, .differs?: return true
        default: break
        }
        if let storeCounter, let tpmCounter, tpmCounter > storeCounter { return true }
        return shippedThrough > (newest?.sequence ?? 0)
    }
}

extension AuditLog {
    /// The state `tpm recover` would accept, against `seal` (an `audit export`'s last line)
    /// when given, and the TPM's counter when it still answers.
    public func recoveryState(checkingAgainst seal: AuditSeal?) throws -> TPMRecoveryState {
        let (newest, storedSeal, binding, expected) = try database.writer.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT seq, wallTime, event FROM audit ORDER BY seq DESC LIMIT 1")
            let newest = row.map { (sequence: $0["seq"] as Int64, time: Date(timeIntervalSince1970: $0["wallTime"]),
                                    event: $0["event"] as String) }
            let binding = try MetaRecord.fetch(db)?.tpm
            let expected = try StateStore.value(db, TPMBinding.counterStateKey).flatMap(TPMCounter.decode)
            return (newest, try? Self.storedSeal(db), binding, expected)
        }
        var state = TPMRecoveryState(newest: newest, storeCounter: expected, shippedThrough: 0)
        if let trail = storedSeal?.trail { state.shippedThrough = (try? shippedThrough(trail: trail)) ?? 0 }
        if let binding {
            do {
                state.tpmCounter = try TPMDevice.configured.counter(binding.counter, auth: tpmCounterAuth)
            } catch let error as TPMError {
                state.counterProblem = error.description
            }
        }
        if let seal {
            if seal.trail != storedSeal?.trail || !seal.isSigned(by: signer.publicKey) {
                state.checkpoint = .foreign
            } else if seal.sequence > (newest?.sequence ?? 0) {
                state.checkpoint = .older(sequence: seal.sequence)
            } else {
                let link = try database.writer.read { db in
                    try Data.fetchOne(db, sql: "SELECT chain FROM audit WHERE seq = ?", arguments: [seal.sequence])
                }
                state.checkpoint = link.map(Array.init) == seal.chain || (seal.sequence == 0 && seal.chain == AuditSeal.genesis)
                    ? .holds(sequence: seal.sequence) : .differs(sequence: seal.sequence)
            }
        }
        return state
    }
}
