import Foundation
import Testing
import TouchgateBasics
import TouchgateTestSupport
@testable import TouchgateVault

/// These use the real kernel keyring of the user running the tests. Every vault has a
/// random id, part of the key description, so tests running side by side never meet.
@Suite("Vault session in the kernel keyring")
struct VaultSessionTests {
    @Test("unlock puts the key in the keyring; currentKey reads it; lock removes it")
    func unlockAndLock() throws {
        let fixture = try VaultFixture()
        let session = VaultSession(vault: fixture.vault, idleTimeout: .seconds(60))
        defer { _ = try? session.lock() }
        #expect(session.keyDescription.hasPrefix("touchgate:"))
        #expect(try session.currentKey() == nil)
        #expect(throws: VaultError.locked) { try session.requireKey() }

        #expect(throws: VaultError.wrongPassphrase) { try session.unlock(passphrase: secret("wrong")) }
        #expect(try session.currentKey() == nil)

        try fixture.vault.setItem(named: "token", value: secret("v"), policy: "biometryAny", freshTouch: false,
                                  enrollmentDigest: nil, key: fixture.key)
        try session.unlock(passphrase: secret(VaultFixture.passphrase))
        // Another handle (as another process would have) finds the same key.
        let other = VaultSession(vault: try Vault.open(database: fixture.store.database, owner: "alice"))
        let key = try #require(try other.currentKey())
        #expect(key.bytes.constantTimeEquals(fixture.key.bytes))
        #expect(string(try fixture.vault.item(named: "token", key: key).value) == "v")

        #expect(try session.lock())
        #expect(try session.currentKey() == nil)
        #expect(try other.currentKey() == nil)
        #expect(try !session.lock())
    }

    // The three below measure time on a thread of their own (``offThePool``): across a
    // suspension a test resumes when the cooperative pool lets it, which on a loaded two-core
    // machine was 77 s after a 500 ms sleep. They carry no time limit for the same reason.

    @Test("the key expires after the idle timeout, and use pushes the timeout out")
    func idleTimeout() async throws {
        let fixture = try VaultFixture()
        let session = VaultSession(vault: fixture.vault, idleTimeout: .seconds(2))
        defer { _ = try? session.lock() }
        // Used about every half second for 3 s: each use restarts the 2 s timeout. The key
        // must be there whenever the previous use was less than 1.5 s ago (a loaded machine
        // may sleep longer than asked; such a gap proves nothing, so it ends the round, and
        // a round with no use at all is tried again, up to five times).
        let (uses, missing, afterIdle) = try await offThePool { () throws -> (Int, Int, VaultKey?) in
            var uses = 0, missing = 0
            for _ in 1...5 where uses == 0 {
                try session.unlock(passphrase: secret(VaultFixture.passphrase))
                let start = ContinuousClock.now
                var lastUse = start
                while ContinuousClock.now - start < .seconds(3) {
                    Thread.sleep(forTimeInterval: 0.5)
                    let now = ContinuousClock.now
                    guard now - lastUse < .milliseconds(1500) else { break }
                    if try session.currentKey() == nil { missing += 1 }
                    lastUse = now
                    uses += 1
                }
            }
            Thread.sleep(forTimeInterval: 4)
            return (uses, missing, try session.currentKey())
        }
        #expect(uses >= 1, "the machine was too loaded to use the key within its timeout")
        #expect(missing == 0, "the key was gone \(missing) of \(uses) times within its timeout")
        #expect(afterIdle == nil)
    }

    @Test("a 1 s timeout locks after about 2 s idle")
    func oneSecondTimeout() async throws {
        let fixture = try VaultFixture()
        let session = VaultSession(vault: fixture.vault, idleTimeout: .seconds(1))
        defer { _ = try? session.lock() }
        try session.unlock(passphrase: secret(VaultFixture.passphrase))
        #expect(try session.currentKey() != nil)
        // The keyring counts whole seconds, so the key goes between 1 and 2 s after its last use.
        let afterIdle = try await offThePool {
            Thread.sleep(forTimeInterval: 2.2)
            return try session.currentKey()
        }
        #expect(afterIdle == nil)
        #expect(throws: VaultError.locked) { try session.requireKey() }
    }

    @Test("the key never outlives the maximum age, however often it is used")
    func maximumAge() async throws {
        let fixture = try VaultFixture()
        let session = VaultSession(vault: fixture.vault, idleTimeout: .seconds(600), maximumAge: .seconds(2))
        defer { _ = try? session.lock() }
        try session.unlock(passphrase: secret(VaultFixture.passphrase))
        #expect(try session.currentKey() != nil)
        // Keep using it (each use pushes the idle timeout out) until well past the maximum
        // age; only lower bounds on time are relied on, so a loaded machine cannot fail this.
        let afterMaximum = try await offThePool {
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .seconds(3) {
                _ = try session.currentKey()
                Thread.sleep(forTimeInterval: 0.25)
            }
            return try session.currentKey()
        }
        #expect(afterMaximum == nil)
    }

    @Test("a vault created again in the same directory does not pick up the old key")
    func recreatedVault() throws {
        let fixture = try VaultFixture()
        let session = VaultSession(vault: fixture.vault)
        defer { _ = try? session.lock() }
        try session.unlock(passphrase: secret(VaultFixture.passphrase))
        try fixture.store.tamper("DELETE FROM vault_meta")
        // Removing the vault row by hand is an edit of the authenticated state: accept it
        // as the repair command would, or creating the vault again is refused.
        let state = StateStore(database: fixture.store.database)
        #expect(throws: IntegrityError.self) {
            try Vault.create(database: fixture.store.database, passphrase: secret("pw"), kdf: .minimum, owner: "alice")
        }
        try state.reseal(try state.unverifiedState().values)
        let fresh = try Vault.create(database: fixture.store.database, passphrase: secret("pw"), kdf: .minimum, owner: "alice")
        let freshSession = VaultSession(vault: fresh)
        #expect(freshSession.keyDescription != session.keyDescription)
        #expect(try freshSession.currentKey() == nil)
    }

    @Test("the keyring session is capped at 72 hours after the passphrase")
    func maximumAgeDefault() {
        #expect(VaultSession.defaultMaximumAge == .seconds(72 * 3600))
    }
}
