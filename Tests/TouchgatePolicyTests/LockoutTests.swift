import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Failed attempts and lockout")
struct LockoutTests {
    /// Makes `count` failed attempts with a never-matching reader.
    func fail(_ fixture: Fixture, times count: Int) async {
        let sensor = ScriptedSensor.neverMatching()
        for _ in 0..<count {
            _ = await fixture.read(item(.biometryAny), sensor: sensor)
        }
    }

    @Test("three no-matches lock the reader; the fourth attempt does not ask it")
    func threeFailuresLock() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.neverMatching()
        let target = item(.biometryAny)
        #expect(await fixture.read(target, sensor: sensor).error == .authenticationFailed(.noMatch(attemptsBeforeLockout: 2)))
        #expect(await fixture.read(target, sensor: sensor).error == .authenticationFailed(.noMatch(attemptsBeforeLockout: 1)))
        #expect(
            await fixture.read(target, sensor: sensor).error
                == .lockedOut(LockoutInfo(remaining: .seconds(900), passphraseOnly: false)))
        #expect(sensor.callCount == 3)

        let matching = ScriptedSensor.alwaysMatching()
        let fourth = await fixture.read(target, sensor: matching)
        guard case .lockedOut(let info) = fourth.error else {
            Issue.record("expected lockout, got \(fourth)")
            return
        }
        #expect(!info.passphraseOnly)
        #expect(matching.callCount == 0)
        #expect(sensor.callCount == 3)
        #expect(fixture.events(.lockoutStarted).count == 1)
    }

    @Test("lockout ends after 15 minutes of monotonic time")
    func lockoutExpires() async throws {
        let fixture = Fixture()
        await fail(fixture, times: 3)
        fixture.clock.advance(by: .seconds(15 * 60 - 1))
        let sensor = ScriptedSensor.alwaysMatching()
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .lockedOut(LockoutInfo(remaining: .seconds(1), passphraseOnly: false)))
        #expect(sensor.callCount == 0)

        fixture.clock.advance(by: .seconds(1))
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).value != nil)
        #expect(sensor.callCount == 1)
        #expect(fixture.events(.lockoutEnded).map(\.reason) == ["lockout expired"])
        #expect(try fixture.status().consecutiveFailures == 0)
        #expect(try fixture.status().cumulativeFailures == 3)
    }

    @Test("moving the wall clock forward or back does not shorten a lockout")
    func wallClockJump() async throws {
        let fixture = Fixture()
        await fail(fixture, times: 3)
        let sensor = ScriptedSensor.alwaysMatching()
        fixture.clock.setWallTime(fixture.clock.wallTime.addingTimeInterval(2 * 86_400))
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .lockedOut(LockoutInfo(remaining: .seconds(900), passphraseOnly: false)))
        fixture.clock.setWallTime(fixture.clock.wallTime.addingTimeInterval(-5 * 86_400))
        #expect(try fixture.status().lockout?.remaining == .seconds(900))
        #expect(sensor.callCount == 0)
    }

    @Test("a lockout from a previous boot restarts with its full duration")
    func rebootRestartsLockout() async throws {
        let fixture = Fixture()
        await fail(fixture, times: 3)
        fixture.clock.advance(by: .seconds(10 * 60))
        fixture.clock.reboot(bootID: "boot-2")
        #expect(try fixture.status().lockout?.remaining == .seconds(900))
        fixture.clock.advance(by: .seconds(14 * 60))
        #expect(try fixture.status().lockout?.remaining == .seconds(60))
        fixture.clock.advance(by: .seconds(60))
        #expect(try fixture.status().lockout == nil)
        #expect(fixture.events(.lockoutStarted).count == 2)
    }

    @Test("after 20 failures since the passphrase, only the passphrase lifts the lockout")
    func passphraseOnlyAfterTwenty() async throws {
        let fixture = Fixture()
        for _ in 0..<6 {
            await fail(fixture, times: 3)
            fixture.clock.advance(by: .seconds(15 * 60))
        }
        await fail(fixture, times: 1)
        #expect(try fixture.status().cumulativeFailures == 19)
        let sensor = ScriptedSensor.neverMatching()
        #expect(
            await fixture.read(item(.biometryAny), sensor: sensor).error
                == .lockedOut(LockoutInfo(remaining: nil, passphraseOnly: true)))

        fixture.clock.advance(by: .seconds(24 * 3600))
        let matching = ScriptedSensor.alwaysMatching()
        #expect(await fixture.read(item(.biometryAny), sensor: matching).error == .lockedOut(LockoutInfo(remaining: nil, passphraseOnly: true)))
        #expect(matching.callCount == 0)

        let unlocked = try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        #expect(unlocked.factors == [.passphrase])
        #expect(try fixture.status().lockout == nil)
        #expect(try fixture.status().cumulativeFailures == 0)
        #expect(await fixture.read(item(.biometryAny, name: "other"), sensor: matching, enrollment: nil).value != nil)
        #expect(fixture.events(.lockoutEnded).last?.reason == "lifted by passphrase")
    }

    @Test("a wrong passphrase does not lift a lockout")
    func wrongPassphraseKeepsLockout() async throws {
        let fixture = Fixture()
        await fail(fixture, times: 3)
        await #expect(throws: AuthorizationError.authenticationFailed(.wrongPassphrase)) {
            try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.rejecting())
        }
        #expect(try fixture.status().lockout != nil)
    }

    @Test(
        "retries, timeouts, cancel, unplug and a missing reader are not counted",
        arguments: [
            (SensorError.timeout, AuthorizationError.authenticationFailed(.timedOut)),
            (.cancelled, .cancelled),
            (.disconnected, .readerDisconnected),
            (.unavailable, .readerUnavailable),
            (.retry(.tooShort), .authenticationFailed(.poorCapture(attempts: 5))),
        ])
    func uncountedOutcomes(sensorError: SensorError, expected: AuthorizationError) async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.failing(with: sensorError)
        for _ in 0..<5 {
            #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == expected)
        }
        let status = try fixture.status()
        #expect(status.consecutiveFailures == 0)
        #expect(status.cumulativeFailures == 0)
        #expect(status.lockout == nil)
        // The reader was asked every time: nothing locked it.
        #expect(sensor.callCount == (sensorError == .retry(.tooShort) ? 25 : 5))
    }

    @Test("a poor capture is retried within the budget of 5 scans, then the match counts")
    func retryThenMatch() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor([
            .failure(.retry(.centerFinger)), .failure(.retry(.removeFinger)), .failure(.retry(.general)),
            .failure(.retry(.tooShort)), .success(.match("finger-2")),
        ])
        let grant = try #require(await fixture.read(item(.biometryAny), sensor: sensor).value)
        #expect(grant.matchedPrint == "finger-2")
        #expect(sensor.callCount == 5)
    }

    @Test("five poor scans end a read with poorCapture; a sixth scan is never taken")
    func retryBudgetExhausted() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor(
            Array(repeating: .failure(.retry(.general)), count: 5), then: .success(.match("finger-1")))
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .authenticationFailed(.poorCapture(attempts: 5)))
        #expect(sensor.callCount == PolicyConfiguration.standard.maximumScans)
        #expect(try fixture.status().consecutiveFailures == 0)
    }

    @Test("a match resets the consecutive count but not the cumulative one")
    func matchResetsConsecutive() async throws {
        let fixture = Fixture()
        await fail(fixture, times: 2)
        #expect(await fixture.read(item(.biometryAny), sensor: ScriptedSensor.alwaysMatching()).value != nil)
        let status = try fixture.status()
        #expect(status.consecutiveFailures == 0)
        #expect(status.cumulativeFailures == 2)
        await fail(fixture, times: 2)
        #expect(try fixture.status().lockout == nil)
    }

    @Test("the passphrase branch of an item still works during a biometric lockout")
    func passphraseDuringLockout() async throws {
        let fixture = Fixture()
        await fail(fixture, times: 3)
        let sensor = ScriptedSensor.alwaysMatching()
        let grant = try #require(
            await fixture.read(item(.userPresence), sensor: sensor, passphrase: ScriptedPassphraseVerifier.accepting()).value)
        #expect(grant.factors == [.passphrase])
        #expect(sensor.callCount == 0)
        #expect(try fixture.status().lockout == nil)
    }
}
