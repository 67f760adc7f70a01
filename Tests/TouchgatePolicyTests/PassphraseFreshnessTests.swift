import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Passphrase since boot and within 72 hours")
struct PassphraseFreshnessTests {
    @Test("fingerprint-only access is refused until the passphrase is entered this boot")
    func neverEntered() async throws {
        let fixture = Fixture(passphraseEntered: false)
        let sensor = ScriptedSensor.alwaysMatching()
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .passphraseRequired(.notEnteredSinceBoot))
        #expect(sensor.callCount == 0)
        _ = try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        try fixture.evaluator.lock()
        let grant = try #require(await fixture.read(item(.biometryAny), sensor: sensor).value)
        #expect(grant.factors == [.biometry])
    }

    @Test("a passphrase entered more than 72 hours ago no longer allows fingerprint-only access")
    func expired() async {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        fixture.clock.advance(by: .seconds(72 * 3600))
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).value != nil)
        fixture.clock.advance(by: .seconds(1))
        try? fixture.evaluator.lock()
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .passphraseRequired(.expired))
        #expect(sensor.callCount == 1)
    }

    @Test("a passphrase from a previous boot does not count")
    func previousBoot() async {
        let fixture = Fixture()
        fixture.clock.reboot(bootID: "boot-2", uptime: .seconds(30))
        let sensor = ScriptedSensor.alwaysMatching()
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .passphraseRequired(.notEnteredSinceBoot))
        #expect(sensor.callCount == 0)
    }

    @Test("a stale passphrase makes user-presence ask for the passphrase instead")
    func userPresenceFallsBack() async throws {
        let fixture = Fixture(passphraseEntered: false)
        let sensor = ScriptedSensor.alwaysMatching()
        let verifier = ScriptedPassphraseVerifier.accepting()
        let grant = try #require(await fixture.read(item(.userPresence), sensor: sensor, passphrase: verifier).value)
        #expect(grant.factors == [.passphrase])
        #expect(sensor.callCount == 0)
        // That entry now counts for fingerprint-only access too.
        try fixture.evaluator.lock()
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).value?.factors == [.biometry])
    }

    @Test("biometry&passphrase works without an earlier entry: the passphrase is part of it")
    func combinedNeedsNoEarlierEntry() async throws {
        let fixture = Fixture(passphraseEntered: false)
        let sensor = ScriptedSensor.alwaysMatching()
        let grant = try #require(
            await fixture.read(
                item(.and(.biometryCurrentSet, .passphrase)), sensor: sensor,
                passphrase: ScriptedPassphraseVerifier.accepting()
            ).value)
        #expect(grant.factors == [.biometry, .passphrase])
        #expect(sensor.callCount == 1)
    }

    @Test("the status reports why the passphrase is needed")
    func status() throws {
        let fixture = Fixture(passphraseEntered: false)
        #expect(try fixture.status().passphraseRequirement == .notEnteredSinceBoot)
        let fresh = Fixture()
        #expect(try fresh.status().passphraseRequirement == nil)
    }
}
