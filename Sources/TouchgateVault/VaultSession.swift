import CSodium
public import FoundationEssentials
public import TouchgateBasics
import TouchgatePolicy

/// Holds the unlocked vault key in the kernel keyring between passphrase entries.
///
/// ``unlock(passphrase:)`` checks the passphrase and puts the vault key in the user's
/// keyring under ``keyDescription`` with a timeout. ``currentKey()`` reads it back and
/// pushes the timeout out again, so only idle time locks the vault; the timeout never
/// reaches past ``maximumAge`` after the passphrase was entered. ``lock()`` removes it;
/// a reboot wipes it. Any process of the same user can read the key while it is there:
/// this is the in-process security boundary described in DESIGN.md.
///
/// Thread-safe: all state is in the kernel and the database.
public struct VaultSession: Sendable {
    /// The vault whose key this session holds.
    public let vault: Vault
    /// When the key goes: idle time without use, and the maximum age after the passphrase.
    public let expiry: KeyExpiry
    /// Idle time after which the key expires unless used.
    public var idleTimeout: Duration { expiry.idleTimeout }
    /// Longest time the key stays after the passphrase was entered, however busy.
    public var maximumAge: Duration { expiry.maximumAge }

    /// Default ``idleTimeout``: 8 hours.
    public static let defaultIdleTimeout = KeyExpiry.defaultIdleTimeout
    /// Default ``maximumAge``: 72 hours (DESIGN.md: the passphrase at least every 72 hours).
    public static let defaultMaximumAge = KeyExpiry.defaultMaximumAge

    /// A session for `vault`. Timeouts are rounded up to whole seconds (at least one); the
    /// key then goes at most one second after them (the keyring's resolution).
    public init(vault: Vault, idleTimeout: Duration = VaultSession.defaultIdleTimeout,
                maximumAge: Duration = VaultSession.defaultMaximumAge) {
        self.vault = vault
        self.expiry = KeyExpiry(idleTimeout: idleTimeout, maximumAge: maximumAge)
    }

    /// `touchgate:` and a hash of the data directory and the vault id, so two data
    /// directories, or a vault recreated in the same one, never share a key.
    public var keyDescription: String {
        let path = vault.database.location.directory.standardizedFileURL.resolvingSymlinksInPath().path
        var input = Array(path.utf8)
        input.append(0)
        input += vault.vaultID
        var digest = [UInt8](repeating: 0, count: 16)
        Sodium.ensureInitialized()
        _ = crypto_generichash(&digest, digest.count, input, UInt64(input.count), nil, 0)
        return "touchgate:" + Hex.encode(digest)
    }

    // Payload: format byte, 32-byte vault key, CLOCK_BOOTTIME of the unlock in ns (LE).
    private static let payloadFormat: UInt8 = 1
    private static let payloadBytes = 1 + 32 + 8

    /// Checks `passphrase` (Argon2id, so about a second) and stores the vault key in the
    /// keyring; returns it.
    /// - Throws: ``VaultError/wrongPassphrase`` (the keyring is then left as it was),
    ///   ``VaultError/system(operation:code:)`` when the keyring refuses.
    @discardableResult
    public func unlock(passphrase: SecretBytes) throws -> VaultKey {
        let key = try vault.unlock(passphrase: passphrase)
        try hold(key)
        return key
    }

    /// Stores `key`, which the caller opened with the passphrase just now, in the keyring;
    /// the maximum age counts from now.
    /// - Throws: ``VaultError/system(operation:code:)`` when the keyring refuses.
    public func hold(_ key: VaultKey) throws {
        vault.check(key)
        let nanoseconds = UInt64(SystemClock.readBootTime().timeInterval * 1e9)
        let payload = key.bytes.withUnsafeBytes { keyBytes in
            SecretBytes.make(count: Self.payloadBytes) { out in
                out[0] = Self.payloadFormat
                out.baseAddress!.advanced(by: 1).copyMemory(from: keyBytes.baseAddress!, byteCount: 32)
                for i in 0..<8 { out[33 + i] = UInt8(nanoseconds >> (8 * UInt64(i)) & 0xff) }
            }
        }
        try KernelKeyring.store(keyDescription, payload: payload, timeout: Self.wholeSeconds(min(idleTimeout, maximumAge)))
    }

    /// The vault key if the vault is unlocked, `nil` if locked. Each successful call
    /// restarts the idle timeout (capped by ``maximumAge`` since the unlock).
    public func currentKey() throws -> VaultKey? {
        let description = keyDescription
        guard let (serial, payload) = try KernelKeyring.read(description, capacity: Self.payloadBytes) else { return nil }
        let fields: (format: UInt8, unlockedAt: UInt64)? = payload.withUnsafeBytes { bytes in
            guard bytes.count == Self.payloadBytes else { return nil }
            var ns: UInt64 = 0
            for i in 0..<8 { ns |= UInt64(bytes[33 + i]) << (8 * UInt64(i)) }
            return (bytes[0], ns)
        }
        guard let fields, fields.format == Self.payloadFormat else {
            // Not a key this code wrote: treat as locked and clear it.
            try KernelKeyring.remove(description)
            return nil
        }
        guard let timeout = expiry.lifetimeIfUsed(unlockedAt: Double(fields.unlockedAt) / 1e9,
                                                  now: SystemClock.readBootTime().timeInterval) else {
            try KernelKeyring.remove(description)
            return nil
        }
        guard try KernelKeyring.setTimeout(serial, Self.wholeSeconds(.seconds(timeout))) else { return nil }
        let key = payload.withUnsafeBytes { bytes in
            SecretBytes.make(count: 32) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[1..<33])) }
        }
        return VaultKey(bytes: key, vaultID: vault.vaultID)
    }

    /// When the held key goes at the latest (the maximum age after the passphrase), or nil
    /// when none is held. Reading it does not count as use: the idle timeout is not pushed
    /// out, and it may take the key sooner.
    public func latestExpiry() throws -> Date? {
        guard let (_, payload) = try KernelKeyring.read(keyDescription, capacity: Self.payloadBytes) else { return nil }
        let unlockedAt: Double? = payload.withUnsafeBytes { bytes in
            guard bytes.count == Self.payloadBytes, bytes[0] == Self.payloadFormat else { return nil }
            var ns: UInt64 = 0
            for i in 0..<8 { ns |= UInt64(bytes[33 + i]) << (8 * UInt64(i)) }
            return Double(ns) / 1e9
        }
        guard let unlockedAt else { return nil }
        return expiry.latestExpiry(unlockedAt: unlockedAt, now: SystemClock.readBootTime().timeInterval)
    }

    /// The vault key, or ``VaultError/locked`` (whose message says to run `touchgate unlock`).
    public func requireKey() throws -> VaultKey {
        guard let key = try currentKey() else { throw VaultError.locked }
        return key
    }

    /// Removes the key from the keyring; returns whether the vault was unlocked.
    @discardableResult
    public func lock() throws -> Bool {
        try KernelKeyring.remove(keyDescription)
    }

    /// The keyring timeout for `duration`. The kernel keeps expiry times in whole seconds
    /// of the wall clock (`now_seconds + timeout`), so a timeout of n seconds expires after
    /// anything between n-1 and n; one second more makes it "at least `duration`".
    /// Fails with ``VaultError/keyringUnusable`` when this process's kernel keyring cannot
    /// keep a vault key, leaving nothing behind.
    public static func checkKeyringUsable() throws {
        try KernelKeyring.checkUsable()
    }

    private static func wholeSeconds(_ duration: Duration) -> UInt32 {
        UInt32(min(max(duration.timeInterval.rounded(.up), 1) + 1, Double(UInt32.max)))
    }
}
