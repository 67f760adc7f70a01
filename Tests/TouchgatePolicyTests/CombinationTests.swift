import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("And/or combinations")
struct CombinationTests {
    @Test("biometry&passphrase needs both")
    func andNeedsBoth() async throws {
        let fixture = Fixture()
        let policy = try AccessPolicy(parsing: "biometry-any&passphrase")

        let sensor = ScriptedSensor.alwaysMatching()
        let verifier = ScriptedPassphraseVerifier.accepting()
        let grant = try #require(await fixture.read(item(policy, fresh: true), sensor: sensor, passphrase: verifier).value)
        #expect(grant.factors == [.biometry, .passphrase])
        #expect(sensor.callCount == 1)
        #expect(verifier.callCount == 1)

        // Wrong passphrase: refused, and the reader is not asked (passphrase goes first).
        let idle = ScriptedSensor.alwaysMatching()
        #expect(
            await fixture.read(item(policy, fresh: true), sensor: idle, passphrase: ScriptedPassphraseVerifier.rejecting()).error
                == .authenticationFailed(.wrongPassphrase))
        #expect(idle.callCount == 0)

        // No way to ask for the passphrase: refused.
        #expect(await fixture.read(item(policy, fresh: true), sensor: idle, passphrase: nil).error == .passphraseRequired(.requiredByPolicy))
        #expect(idle.callCount == 0)

        // Right passphrase, wrong finger: refused.
        #expect(
            await fixture.read(
                item(policy, fresh: true), sensor: ScriptedSensor.neverMatching(), passphrase: ScriptedPassphraseVerifier.accepting()
            ).error == .authenticationFailed(.noMatch(attemptsBeforeLockout: 2)))
    }

    @Test("biometry|passphrase accepts the passphrase when the reader is unavailable or absent")
    func orFallsBack() async throws {
        let fixture = Fixture()
        let policy = try AccessPolicy(parsing: "biometry-current-set|passphrase")
        for sensor in [ScriptedSensor.failing(with: .unavailable), ScriptedSensor.failing(with: .disconnected)] {
            let grant = try #require(
                await fixture.read(item(policy, fresh: true), sensor: sensor, passphrase: ScriptedPassphraseVerifier.accepting()).value)
            #expect(grant.factors == [.passphrase])
            #expect(sensor.callCount == 1)
        }
        let noReader = try #require(
            await fixture.read(item(policy, fresh: true), sensor: nil, passphrase: ScriptedPassphraseVerifier.accepting()).value)
        #expect(noReader.factors == [.passphrase])
    }

    @Test("an or prefers the left branch and does not ask for the passphrase after a match")
    func orPrefersLeft() async throws {
        let fixture = Fixture()
        let verifier = ScriptedPassphraseVerifier.accepting()
        let grant = try #require(await fixture.read(item(.userPresence), sensor: ScriptedSensor.alwaysMatching(), passphrase: verifier).value)
        #expect(grant.factors == [.biometry])
        #expect(verifier.callCount == 0)
    }

    @Test("cancelling the touch cancels the whole request; no passphrase fallback")
    func cancelStops() async {
        let fixture = Fixture()
        let verifier = ScriptedPassphraseVerifier.accepting()
        #expect(
            await fixture.read(item(.userPresence), sensor: ScriptedSensor.failing(with: .cancelled), passphrase: verifier).error
                == .cancelled)
        #expect(verifier.callCount == 0)
    }

    @Test("when neither branch can reach the user, the first branch's reason is reported")
    func neitherReachable() async {
        let fixture = Fixture()
        #expect(await fixture.read(item(.userPresence), sensor: nil, passphrase: nil).error == .readerUnavailable)
    }

    @Test("when the fallback was tried and failed, its reason is reported")
    func fallbackFailureReported() async {
        let fixture = Fixture()
        let result = await fixture.read(
            item(.userPresence), sensor: ScriptedSensor.failing(with: .unavailable),
            passphrase: ScriptedPassphraseVerifier.rejecting())
        #expect(result.error == .authenticationFailed(.wrongPassphrase))
    }

    @Test("a passphrase-only item never asks the reader")
    func passphraseOnly() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        let grant = try #require(
            await fixture.read(item(.passphrase), sensor: sensor, passphrase: ScriptedPassphraseVerifier.accepting()).value)
        #expect(grant.factors == [.passphrase])
        #expect(sensor.callCount == 0)
    }

    @Test("nested combinations: (biometry-any|passphrase)&biometry-current-set asks the reader once")
    func nested() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        let verifier = ScriptedPassphraseVerifier.accepting()
        let policy = try AccessPolicy(parsing: "(biometry-any|passphrase)&biometry-current-set")
        let grant = try #require(await fixture.read(item(policy), sensor: sensor, passphrase: verifier).value)
        #expect(grant.factors == [.biometry])
        #expect(sensor.callCount == 1)
        #expect(verifier.callCount == 0)
    }
}
