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
///   its WAL cut), refused with ``IntegrityError/rolledBack(detail:)`` — unless this
///   TPM boot began without an orderly shutdown and the gap is within the TPM's orderly
///   count: an orderly (hybrid) counter jumps that far forward after a power loss, so the
///   store adopts the TPM's value, with an audit record saying so.
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
    func syncTPMCounter() {
        guard let (binding, expected) = try? counterState(),
              expected > TPMCounterMemo.highest(binding.counter, on: TPMDevice.configured) else { return }
        let auth = tpmCounterAuth, device = TPMDevice.configured
        _ = try? withTPMLock {
            guard let (_, expected) = try counterState() else { return }
            let value = try device.counter(binding.counter, auth: auth, advancingTo: expected)
            TPMCounterMemo.saw(value, index: binding.counter, on: device)
        }
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
            let value = try Self.counterCall { try device.counter(binding.counter, auth: auth, advancingTo: expected) }
            TPMCounterMemo.saw(value, index: binding.counter, on: device)
            if value == expected { return nil }
            let boot = try Vault.tpm { try device.bootInfo() }
            guard !boot.orderly, value - expected <= boot.orderlyCount else {
                let detail = "the store is older than the TPM's counter says (it expects \(expected), the TPM is at \(value)): an older copy of it was put back, or its WAL file was cut. Restore the newest copy of the data directory; to accept this one, run `touchgate repair` with the passphrase"
                journal.send(Self.record(AuditMAC.Fields(
                    sequence: 0, unixTime: now().timeIntervalSince1970, bootTime: SystemClock.readBootTime().timeInterval,
                    bootID: host.bootID, uid: Int64(host.uid), loginName: host.loginName, vaultUser: nil,
                    event: AuditEvent.tpmCounter.rawValue, item: nil, outcome: AuditOutcome.denied.rawValue,
                    reason: "refused a rolled-back store: \(detail)", previousMAC: AuditMAC.genesis),
                    mac: AuditMAC.genesis, links: (AuditMAC.genesis, AuditMAC.genesis)))
                throw IntegrityError.rolledBack(detail: detail)
            }
            try adoptTPMCounter(value)
            return (expected, value)
        }
        if let jump {
            try append(.tpmCounter, .success, reason: "the TPM's counter was \(jump.to - jump.from) ahead of the store (\(jump.from) → \(jump.to)) after a power loss (the TPM's boot was not orderly): adopted")
        }
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

    /// Sets the store's expected value to `value` (a power loss's jump, or a repair).
    func adoptTPMCounter(_ value: UInt64) throws {
        try database.writeImmediately { db in
            let head = try requireAuthenticState(db)
            _ = try StateStore.update(db, TPMBinding.counterStateKey) { $0 = TPMCounter.encode(value) }
            try saveState(db, head: head)
        }
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
