import CTouchgateSys
public import FoundationEssentials
public import TouchgateVault

/// Where an unlocked vault key waits between the passphrase and the touches that use it.
///
/// Today: the user's kernel keyring (``KernelKeyringCustody``), readable by the user's own
/// processes — the in-process boundary. Next: a daemon's own locked memory.
public protocol KeyCustody: Sendable {
    /// Holds `key`, which the passphrase opened just now, until lock, idle timeout or the
    /// maximum age.
    func hold(_ key: VaultKey) throws
    /// The key if held; counts as use (restarts the idle timeout).
    func currentKey() throws -> VaultKey?
    /// Whether the key is held, without counting as use.
    var isHolding: Bool { get }
    /// When the held key goes at the latest, without counting as use; nil when not held
    /// or unknown.
    var latestExpiry: Date? { get }
    /// Forgets the key; returns whether it was held.
    @discardableResult func release() throws -> Bool
}

/// The vault key in the kernel keyring (`VaultSession`), with the same timeouts in every process.
struct KernelKeyringCustody: KeyCustody {
    let session: VaultSession

    init(vault: Vault) {
        session = VaultSession(vault: vault)
    }

    func hold(_ key: VaultKey) throws {
        try session.hold(key)
    }

    func currentKey() throws -> VaultKey? {
        try session.currentKey()
    }

    var isHolding: Bool {
        CTouchgateSys_key_search_user(session.keyDescription) > 0
    }

    var latestExpiry: Date? {
        try? session.latestExpiry()
    }

    func release() throws -> Bool {
        try session.lock()
    }
}
