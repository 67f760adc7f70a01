public import FoundationEssentials
import TouchgatePolicy

/// When an unlocked vault key goes, wherever it is held (the personal mode's kernel
/// keyring, ``VaultSession``; touchgated's memory): after ``idleTimeout`` without use,
/// and at ``maximumAge`` after the passphrase was entered however busy. The one place
/// that rule is written.
///
/// Instants are seconds on the boot clock (`CLOCK_BOOTTIME`), which counts suspended time.
public struct KeyExpiry: Sendable, Equatable {
    /// Idle time after which the key goes unless used.
    public let idleTimeout: Duration
    /// Longest time the key stays after the passphrase, however busy.
    public let maximumAge: Duration

    /// Default ``idleTimeout``: 8 hours.
    public static let defaultIdleTimeout: Duration = .seconds(8 * 3600)
    /// Default ``maximumAge``: 72 hours (DESIGN.md: the passphrase at least every 72 hours).
    public static let defaultMaximumAge: Duration = .seconds(72 * 3600)

    /// The rule with these limits.
    public init(idleTimeout: Duration = KeyExpiry.defaultIdleTimeout, maximumAge: Duration = KeyExpiry.defaultMaximumAge) {
        self.idleTimeout = idleTimeout
        self.maximumAge = maximumAge
    }

    /// When a key unlocked at `unlockedAt` and last used at `lastUse` goes.
    public func expiry(unlockedAt: Double, lastUse: Double) -> Double {
        min(lastUse + idleTimeout.timeInterval, unlockedAt + maximumAge.timeInterval)
    }

    /// How long a key unlocked at `unlockedAt` may stay if used at `now`: the idle
    /// timeout, cut by the maximum age; nil when the maximum age has passed.
    public func lifetimeIfUsed(unlockedAt: Double, now: Double) -> Double? {
        let left = unlockedAt + maximumAge.timeInterval - now
        return left > 0 ? min(idleTimeout.timeInterval, left) : nil
    }

    /// When a key unlocked at `unlockedAt` goes at the latest (its maximum age), as a
    /// wall-clock date seen at `now`; nil when that has passed.
    public func latestExpiry(unlockedAt: Double, now: Double) -> Date? {
        let left = unlockedAt + maximumAge.timeInterval - now
        // Whole seconds, rounded down: the moment is shown to the second, and the same
        // moment asked for twice is the same value (not the wall clock's jitter).
        return left > 0 ? Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + left).rounded(.down)) : nil
    }
}
