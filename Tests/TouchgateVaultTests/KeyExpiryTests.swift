import Foundation
import Testing
import TouchgateVault

/// The one key-expiry rule both custodies follow (the keyring's VaultSession, touchgated's HeldKeys).
@Suite("Key expiry")
struct KeyExpiryTests {
    let rule = KeyExpiry(idleTimeout: .seconds(60), maximumAge: .seconds(300))

    @Test("a key goes after the idle time without use, and at the maximum age however busy")
    func idleAndMaximumAge() {
        #expect(rule.expiry(unlockedAt: 1000, lastUse: 1000) == 1060)
        #expect(rule.expiry(unlockedAt: 1000, lastUse: 1200) == 1260)
        #expect(rule.expiry(unlockedAt: 1000, lastUse: 1280) == 1300, "use cannot push it past the maximum age")
    }

    @Test("a use gives the idle time, cut by what is left of the maximum age, and nothing past it")
    func lifetimeIfUsed() {
        #expect(rule.lifetimeIfUsed(unlockedAt: 1000, now: 1010) == 60)
        #expect(rule.lifetimeIfUsed(unlockedAt: 1000, now: 1270) == 30)
        #expect(rule.lifetimeIfUsed(unlockedAt: 1000, now: 1300) == nil)
        #expect(rule.latestExpiry(unlockedAt: 1000, now: 1300) == nil)
        let latest = rule.latestExpiry(unlockedAt: 1000, now: 1100)
        #expect(latest.map { abs($0.timeIntervalSinceNow - 200) < 5 } == true)
    }

    @Test("the defaults: 8 hours idle, 72 hours at most")
    func defaults() {
        #expect(KeyExpiry().idleTimeout == .seconds(8 * 3600) && KeyExpiry().maximumAge == .seconds(72 * 3600))
    }
}
