import CTouchgateTPM
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TouchgateBasics

/// A TPM 2.0, reached through tpm2-tss (``CTouchgateTPM``, loaded at run time).
///
/// The TPM's handles and sessions never outlive a call (the shim flushes them on every
/// path). The connection does: one per TCTI and process, opened at the first call and
/// kept, because opening it (the TCTI, ESYS) was most of a counter read's cost and a
/// bound vault's command makes several (measured in `make bench`, section 11). Calls are
/// serialized on it (ESYS is not thread-safe); a call that fails on a connection that
/// broke (swtpm restarted, a power loss) is made once more on a new one.
///
/// Which TPM: `TOUCHGATE_TPM_TCTI` when set (a tss2 TCTI string, such as
/// `swtpm:path=/run/x/sock` for swtpm on a Unix socket, or `device:/dev/tpmrm0`), else
/// tss2's default search (the resource manager `/dev/tpmrm0` first).
public struct TPMDevice: Sendable, Equatable {
    /// The tss2 TCTI string, or `nil` for the default.
    public let tcti: String?

    public init(tcti: String?) {
        self.tcti = (tcti?.isEmpty ?? true) ? nil : tcti
    }

    /// The TPM this process is configured for (`TOUCHGATE_TPM_TCTI`, else the default).
    public static var configured: TPMDevice {
        TPMDevice(tcti: getenv("TOUCHGATE_TPM_TCTI").map { String(cString: $0) })
    }

    /// Where it is, for messages.
    public var name: String { tcti ?? "the system TPM (/dev/tpmrm0)" }

    /// The open connections, by TCTI (`""` for the default).
    private static let connections = Mutex<[String: Connection]>([:])

    /// Runs `body` on this process's connection to the TPM, opened when there is none. A
    /// lost connection (``TPMError/unavailable(_:)``) is dropped; with `retrying`, for a
    /// body that may run twice (a read, an unseal), `body` runs once more on a new one. A
    /// counter's definition or increment never does: the TPM may have done it before the
    /// answer was lost.
    private func withTPM<T>(retrying: Bool = true, _ body: (OpaquePointer) throws -> T) throws -> T {
        try Self.connections.withLock { connections in
            let key = tcti ?? ""
            for attempt in 0..<2 {
                let connection: Connection
                if let open = connections[key] {
                    connection = open
                } else {
                    var handle: OpaquePointer?
                    try Self.call { err, size in tg_tpm_open(tcti, &handle, err, size) }
                    guard let handle else { throw TPMError.unavailable("\(name) could not be opened") }
                    connection = Connection(handle)
                    connections[key] = connection
                }
                do {
                    return try body(connection.handle)
                } catch TPMError.unavailable(let message) {
                    connections[key] = nil
                    if attempt == 0 && retrying { continue }
                    throw TPMError.unavailable(message)
                }
            }
            throw TPMError.unavailable("\(name) could not be reached")
        }
    }

    /// An open shim handle, closed when dropped. Used only under ``connections``' lock.
    private final class Connection: @unchecked Sendable {
        let handle: OpaquePointer
        init(_ handle: OpaquePointer) { self.handle = handle }
        deinit { tg_tpm_close(handle) }
    }

    /// The one error funnel: runs a shim call with a message buffer and turns its status
    /// into a ``TPMError``.
    @discardableResult
    private static func call(_ body: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws -> Int32 {
        var message = [CChar](repeating: 0, count: 512)
        let status = message.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        guard status != Int32(TG_TPM_OK) else { return status }
        let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        throw TPMError(status: status, message: text.isEmpty ? "the TPM failed (status \(status))" : text)
    }

    /// Seals `secret` so that it opens only after `auth` is given to `guard` (a passphrase
    /// guard of ``defineGuard(auth:limit:)``): the guard counts every wrong `auth`, the
    /// TPM's machine-wide dictionary-attack counter none.
    func seal(_ secret: SecretBytes, auth: SecretBytes, guard index: UInt32) throws -> [UInt8] {
        try withTPM { tpm in
            var blob = [UInt8](repeating: 0, count: Int(TG_TPM_BLOB_MAX))
            var length = blob.count
            _ = try auth.withUnsafeBytes { a in
                try secret.withUnsafeBytes { s in
                    try Self.call { err, size in
                        tg_tpm_seal(tpm, index, a.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count,
                                    s.baseAddress?.assumingMemoryBound(to: UInt8.self), s.count,
                                    &blob, &length, err, size)
                    }
                }
            }
            return Array(blob.prefix(length))
        }
    }

    /// Defines a passphrase guard (a PIN Fail NV index) for `auth`: after `limit` wrong
    /// ones in a row the TPM refuses even the right one (``TPMError/exhausted(_:)``).
    func defineGuard(auth: SecretBytes, limit: UInt32) throws -> UInt32 {
        try withTPM(retrying: false) { tpm in
            var index: UInt32 = 0
            _ = try auth.withUnsafeBytes { a in
                try Self.call { err, size in
                    tg_tpm_guard_define(tpm, a.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count, limit,
                                        &index, err, size)
                }
            }
            return index
        }
    }

    /// How many wrong passphrases in a row the guard has counted, and its limit.
    func guardStatus(_ index: UInt32) throws -> (count: Int, limit: Int) {
        try withTPM { tpm in
            var count: UInt32 = 0, limit: UInt32 = 0
            try Self.call { err, size in tg_tpm_guard_status(tpm, index, &count, &limit, err, size) }
            return (Int(count), Int(limit))
        }
    }

    /// The name of the TPM's storage primary key: the same until the TPM is cleared, and
    /// different on every other TPM (it derives from the TPM's owner seed).
    func identity() throws -> [UInt8] {
        try withTPM { tpm in
            var name = [UInt8](repeating: 0, count: 64)
            var length = name.count
            try Self.call { err, size in tg_tpm_identity(tpm, &name, &length, err, size) }
            return Array(name.prefix(length))
        }
    }

    /// The guard a sealed blob needs (nil for a blob sealed before guards existed).
    static func guardOf(_ blob: [UInt8]) -> UInt32? {
        var index: UInt32 = 0
        guard tg_tpm_blob_guard(blob, blob.count, &index) == Int32(TG_TPM_OK), index != 0 else { return nil }
        return index
    }

    /// The secret sealed in `blob`, for the right `auth`.
    /// - Throws: ``TPMError/wrongAuth(_:)`` (counted by the guard), ``TPMError/exhausted(_:)``,
    ///   ``TPMError/lockout(_:)``, ``TPMError/foreign(_:)`` (another TPM, a cleared one, or
    ///   a damaged blob).
    func unseal(_ blob: [UInt8], auth: SecretBytes) throws -> SecretBytes {
        try withTPM { tpm in
            try SecretBytes.make(count: 64) { out in
                var length = out.count
                _ = try auth.withUnsafeBytes { a in
                    try Self.call { err, size in
                        tg_tpm_unseal(tpm, blob, blob.count, a.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count,
                                      out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, err, size)
                    }
                }
                guard length == SecretBox.keyBytes else {
                    throw TPMError.foreign("the TPM released a secret of an unexpected size")
                }
            }
        }.prefix32
    }

    /// The TPM's dictionary-attack state.
    public func dictionaryAttackState() throws -> TPMDictionaryAttackState {
        try withTPM { tpm in
            var da = tg_tpm_da()
            try Self.call { err, size in tg_tpm_da_status(tpm, &da, err, size) }
            let manufacturer = withUnsafeBytes(of: da.manufacturer) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self).trimmingSpaces()
            }
            return TPMDictionaryAttackState(failures: Int(da.failures), maximumFailures: Int(da.max_failures),
                                            forgetsOneEverySeconds: Int(da.interval_seconds),
                                            lockoutRecoverySeconds: Int(da.recovery_seconds),
                                            isLockedOut: da.in_lockout != 0, manufacturer: manufacturer)
        }
    }

    /// Defines a new monotonic counter whose reads and increments need `auth`; returns its
    /// NV index and first value.
    func defineCounter(auth: SecretBytes) throws -> (index: UInt32, value: UInt64) {
        try withTPM(retrying: false) { tpm in
            var index: UInt32 = 0, value: UInt64 = 0
            _ = try auth.withUnsafeBytes { a in
                try Self.call { err, size in
                    tg_tpm_counter_define(tpm, a.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count,
                                          &index, &value, err, size)
                }
            }
            return (index, value)
        }
    }

    /// The counter's value, after incrementing it up to `target` when it is below (never
    /// past it). The caller serializes the processes that move it (``AuditLog``'s lock).
    func counter(_ index: UInt32, auth: SecretBytes, advancingTo target: UInt64 = 0) throws -> UInt64 {
        try withTPM(retrying: target == 0) { tpm in
            var value: UInt64 = 0
            _ = try auth.withUnsafeBytes { a in
                try Self.call { err, size in
                    tg_tpm_counter_advance(tpm, index, a.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count,
                                           target, &value, err, size)
                }
            }
            return value
        }
    }

    /// Removes a counter or a guard (a vault bound anew, or a failed enrollment).
    func removeIndex(_ index: UInt32) throws {
        try withTPM { tpm in _ = try Self.call { err, size in tg_tpm_counter_undefine(tpm, index, err, size) } }
    }

    /// How this boot of the TPM began: whether after an orderly shutdown, and how far an
    /// orderly counter may have jumped after a power loss.
    func bootInfo() throws -> TPMBootInfo {
        try withTPM { tpm in
            var boot = tg_tpm_boot()
            try Self.call { err, size in tg_tpm_boot_info(tpm, &boot, err, size) }
            return TPMBootInfo(orderly: boot.orderly != 0, resetCount: boot.reset_count,
                               restartCount: boot.restart_count, orderlyCount: UInt64(boot.orderly_count))
        }
    }

    /// One TPM2_CreatePrimary and its flush (for `make bench`).
    public func createPrimaryOnce() throws {
        try withTPM { tpm in _ = try Self.call { err, size in tg_tpm_bench_primary(tpm, err, size) } }
    }
}

private extension SecretBytes {
    /// The first 32 bytes, in secret memory (the unsealed buffer is allocated at the largest size).
    var prefix32: SecretBytes {
        withUnsafeBytes { SecretBytes(copying: $0.prefix(SecretBox.keyBytes)) }
    }
}

/// The TPM's dictionary-attack protection, as `touchgate tpm status` shows it.
public struct TPMDictionaryAttackState: Sendable, Equatable, Codable {
    /// Wrong authorizations counted now.
    public var failures: Int
    /// How many it takes to lock out.
    public var maximumFailures: Int
    /// One failure is forgotten every this many seconds.
    public var forgetsOneEverySeconds: Int
    /// How long the lockout authorization itself stays locked after a failure.
    public var lockoutRecoverySeconds: Int
    /// Whether the TPM refuses every authorization now.
    public var isLockedOut: Bool
    /// The TPM's manufacturer code (`IBM`, `INTC`, `STM`…).
    public var manufacturer: String

    /// About how long until the TPM accepts a passphrase again (0 when it does now).
    public var secondsUntilAccepting: Int {
        guard isLockedOut else { return 0 }
        return max(1, failures - maximumFailures + 1) * max(forgetsOneEverySeconds, 1)
    }
}

/// How the TPM's current boot began.
struct TPMBootInfo: Sendable, Equatable {
    /// The boot followed an orderly TPM2_Shutdown (no power loss).
    var orderly: Bool
    /// Counts TPM resets (boots).
    var resetCount: UInt32
    /// Counts TPM restarts (resumes from hibernation) since the last reset.
    var restartCount: UInt32
    /// An orderly counter jumps forward by at most this after a power loss.
    var orderlyCount: UInt64
}

/// What went wrong with the TPM. Messages come from the shim: one line, what happened and
/// what to do, never a secret.
public enum TPMError: Error, Equatable, CustomStringConvertible {
    /// No tss2 libraries, or no TPM reachable.
    case unavailable(String)
    /// The authorization (derived from the passphrase) was refused, and counted.
    case wrongAuth(String)
    /// The TPM's machine-wide dictionary-attack lockout is on.
    case lockout(String)
    /// The vault's passphrase guard counted its limit of wrong passphrases in a row: only
    /// the recovery key opens the vault now.
    case exhausted(String)
    /// The sealed key or the counter belongs to another TPM, a cleared one, or is damaged.
    case foreign(String)
    /// Malformed input.
    case badInput(String)
    /// Anything else the TPM or tss2 reported.
    case failed(String)

    init(status: Int32, message: String) {
        switch Int(status) {
        case TG_TPM_UNAVAILABLE: self = .unavailable(message)
        case TG_TPM_WRONG_AUTH: self = .wrongAuth(message)
        case TG_TPM_LOCKOUT: self = .lockout(message)
        case TG_TPM_FOREIGN: self = .foreign(message)
        case TG_TPM_BAD_INPUT: self = .badInput(message)
        case TG_TPM_EXHAUSTED: self = .exhausted(message)
        default: self = .failed(message)
        }
    }

    public var description: String {
        switch self {
        case let .unavailable(message), let .wrongAuth(message), let .lockout(message), let .exhausted(message),
             let .foreign(message), let .badInput(message), let .failed(message):
            return message
        }
    }
}
