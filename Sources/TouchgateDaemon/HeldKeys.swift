import FoundationEssentials
import Synchronization
import TouchgatePolicy
import TouchgateService
import TouchgateVault

/// Unlocked vault keys in the daemon's own memory (guarded, locked, not dumpable, wiped
/// when released): no user process can read them, unlike the kernel keyring of the
/// personal mode. Each key goes after the idle timeout without use, at the maximum age
/// after its passphrase however busy, on lock, and when the daemon stops.
///
/// Times are on the boot clock (`CLOCK_BOOTTIME`), which counts suspended time too.
final class HeldKeys: Sendable {
    private struct Held {
        let key: VaultKey
        let unlockedAt: Double
        var lastUse: Double
    }

    /// When a key goes (the rule the personal mode's keyring follows too).
    let rule: KeyExpiry
    // The keys by slot, only touched under their lock.
    private let held = Mutex<[String: Held]>([:])

    init(idleTimeout: Duration = KeyExpiry.defaultIdleTimeout, maximumAge: Duration = KeyExpiry.defaultMaximumAge) {
        rule = KeyExpiry(idleTimeout: idleTimeout, maximumAge: maximumAge)
    }

    /// The custody of one vault's key.
    func custody(for vault: Vault) -> any KeyCustody {
        Custody(keys: self, slot: Self.slot(of: vault))
    }

    /// Forgets every key that has expired; returns how many.
    @discardableResult
    func sweep() -> Int {
        let now = Self.now()
        return held.withLock { held in
            let expired = held.filter { expiry(of: $0.value) <= now }.map(\.key)
            for slot in expired { held[slot] = nil }
            return expired.count
        }
    }

    /// Forgets every key (the daemon stops).
    func releaseAll() {
        held.withLock { $0.removeAll() }
    }

    /// How many keys are held.
    var count: Int { held.withLock { $0.count } }

    fileprivate func hold(_ key: VaultKey, slot: String) {
        let now = Self.now()
        held.withLock { $0[slot] = Held(key: key, unlockedAt: now, lastUse: now) }
    }

    fileprivate func use(_ slot: String) -> VaultKey? {
        let now = Self.now()
        return held.withLock { held in
            guard var entry = held[slot] else { return nil }
            guard expiry(of: entry) > now else {
                held[slot] = nil
                return nil
            }
            entry.lastUse = now
            held[slot] = entry
            return entry.key
        }
    }

    fileprivate func peek(_ slot: String) -> (holding: Bool, latest: Date?) {
        let now = Self.now()
        return held.withLock { held in
            guard let entry = held[slot], expiry(of: entry) > now else { return (false, nil) }
            return (true, rule.latestExpiry(unlockedAt: entry.unlockedAt, now: now))
        }
    }

    fileprivate func release(_ slot: String) -> Bool {
        held.withLock { $0.removeValue(forKey: slot) != nil }
    }

    private func expiry(of entry: Held) -> Double {
        rule.expiry(unlockedAt: entry.unlockedAt, lastUse: entry.lastUse)
    }

    /// The vault's directory and its random id: a vault made anew in the same directory
    /// never finds the old one's key.
    private static func slot(of vault: Vault) -> String {
        vault.database.location.standardizedPath + "#" + Hex.encode(vault.vaultID)
    }

    private static func now() -> Double {
        SystemClock.readBootTime().timeInterval
    }

    private struct Custody: KeyCustody {
        let keys: HeldKeys
        let slot: String

        func hold(_ key: VaultKey) throws { keys.hold(key, slot: slot) }
        func currentKey() throws -> VaultKey? { keys.use(slot) }
        var isHolding: Bool { keys.peek(slot).holding }
        var latestExpiry: Date? { keys.peek(slot).latest }
        func release() throws -> Bool { keys.release(slot) }
    }
}
