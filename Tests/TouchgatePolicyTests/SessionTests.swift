import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Session reuse, fresh touch and idle timeout")
struct SessionTests {
    @Test("a touch is reused within the window without asking the reader, and not after it")
    func reuseWindow() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        let first = try #require(await fixture.read(item(.biometryAny, name: "a"), sensor: sensor).value)
        #expect(!first.reusedSession)
        // Stay active (every 100 s, under the 2-minute idle timeout) until the window closes.
        for step in 1...2 {
            fixture.clock.advance(by: .seconds(100))
            let grant = try #require(await fixture.read(item(.biometryAny, name: "b\(step)"), sensor: sensor).value)
            #expect(grant.reusedSession)
            #expect(grant.factors == [.biometry])
            #expect(grant.matchedPrint == "finger-1")
        }
        fixture.clock.advance(by: .seconds(99))  // 299 s after the touch
        #expect(try #require(await fixture.read(item(.biometryAny), sensor: sensor).value).reusedSession)
        #expect(sensor.callCount == 1)

        fixture.clock.advance(by: .seconds(1))  // 300 s: the window is closed
        let after = try #require(await fixture.read(item(.biometryAny), sensor: sensor).value)
        #expect(!after.reusedSession)
        #expect(sensor.callCount == 2)
    }

    @Test("an item that requires a fresh touch ignores the session")
    func freshTouch() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        fixture.clock.advance(by: .seconds(5))
        let grant = try #require(await fixture.read(item(.biometryAny, name: "prod-key", fresh: true), sensor: sensor).value)
        #expect(!grant.reusedSession)
        #expect(sensor.callCount == 2)
        // A fresh-touch item with a reader that fails is refused even with a live session.
        #expect(
            await fixture.read(item(.biometryAny, fresh: true), sensor: ScriptedSensor.neverMatching()).error
                == .authenticationFailed(.noMatch(attemptsBeforeLockout: 2)))
    }

    @Test("idle time ends the session")
    func idleTimeout() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        fixture.clock.advance(by: .seconds(119))
        #expect(try #require(await fixture.read(item(.biometryAny), sensor: sensor).value).reusedSession)
        fixture.clock.advance(by: .seconds(120))  // idle for the whole idle timeout
        #expect(try #require(await fixture.read(item(.biometryAny), sensor: sensor).value).reusedSession == false)
        #expect(sensor.callCount == 2)
        #expect(fixture.events(.sessionEnded).map(\.reason) == ["idle for 120 s"])
        #expect(fixture.events(.lock).isEmpty, "vault.lock is kept for an explicit lock")
    }

    @Test("a configured idle timeout is honoured")
    func configuredIdle() async throws {
        let fixture = Fixture(configuration: try PolicyConfiguration(idleTimeout: .seconds(30)))
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        fixture.clock.advance(by: .seconds(30))
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        #expect(sensor.callCount == 2)
    }

    @Test("a zero session timeout disables reuse")
    func zeroTimeout() async throws {
        let fixture = Fixture(configuration: try PolicyConfiguration(sessionTimeout: .zero))
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        #expect(sensor.callCount == 2)
    }

    @Test("locking ends the session; so does a reboot")
    func lockAndReboot() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        try fixture.evaluator.lock()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        #expect(sensor.callCount == 2)

        fixture.clock.reboot(bootID: "boot-2")
        // A new boot also needs the passphrase again, so unlock first.
        _ = try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        let grant = try #require(await fixture.read(item(.biometryAny), sensor: sensor).value)
        #expect(!grant.reusedSession)
        #expect(sensor.callCount == 3)
    }

    @Test("a session holding only the passphrase does not satisfy a fingerprint policy")
    func partialSession() async throws {
        let fixture = Fixture()
        _ = try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        let sensor = ScriptedSensor.alwaysMatching()
        let passphraseItem = try #require(await fixture.read(item(.passphrase), sensor: sensor).value)
        #expect(passphraseItem.reusedSession)
        let fingerItem = try #require(await fixture.read(item(.biometryAny), sensor: sensor).value)
        #expect(!fingerItem.reusedSession)
        #expect(sensor.callCount == 1)
        // Now both proofs are live: biometry&passphrase is reused.
        let both = try #require(await fixture.read(item(.and(.biometryAny, .passphrase)), sensor: sensor).value)
        #expect(both.reusedSession)
        #expect(both.factors == [.biometry, .passphrase])
    }

    @Test("session state is shared through the store (another evaluator sees it)")
    func sharedSession() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        let other = AccessEvaluator(
            clock: fixture.clock, store: fixture.store, auditSink: fixture.audit, principal: "uid=1000(alice)")
        let grant = try await other.authorize(
            item: item(.biometryAny), enrollment: fixture.enrollment, sensor: sensor, passphrase: nil)
        #expect(grant.reusedSession)
        #expect(sensor.callCount == 1)
    }
}
