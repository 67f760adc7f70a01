import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

/// `verify` and `identify` through ``AccessEvaluator/authenticate(action:enrollment:sensor:)``:
/// counted, audited, refused during a lockout, and never a source of reuse.
@Suite("Bare authentication (verify, identify)")
struct AuthenticationTests {
    /// One bare check as a `Result`.
    func check(
        _ fixture: Fixture, sensor: (any BiometricSensor)?, enrollment: EnrollmentStatus? = nil,
        action: String = "verify"
    ) async -> Result<Grant, AuthorizationError> {
        do {
            return .success(try await fixture.evaluator.authenticate(
                action: action, enrollment: enrollment ?? fixture.enrollment, sensor: sensor))
        } catch {
            return .failure(error)
        }
    }

    @Test("a match returns the print, audits one auth.attempt naming the action, and nothing else")
    func matchGrantAndAudit() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching("finger-7")
        let grant = try #require(await check(fixture, sensor: sensor, action: "identify").value)
        #expect(grant.action == .authenticationAttempt)
        #expect(grant.itemName == nil)
        #expect(grant.factors == [.biometry])
        #expect(grant.matchedPrint == "finger-7")
        #expect(!grant.reusedSession)
        #expect(sensor.receivedPrompts == ["Touch the fingerprint reader to identify"])

        let events = fixture.audit.events
        #expect(events.map(\.kind) == [.authenticationAttempt])
        #expect(events[0].outcome == .success)
        #expect(events[0].factor == .biometry)
        #expect(events[0].subject == "finger-7")
        #expect(events[0].reason == "identify: fingerprint matched")
        #expect(events[0].principal == "uid=1000(alice)")
    }

    @Test("a timed lockout refuses without asking the reader, audited as denied")
    func timedLockoutRefusesWithoutSensor() async throws {
        let fixture = Fixture()
        let failing = ScriptedSensor.neverMatching()
        for _ in 0..<3 { _ = await check(fixture, sensor: failing) }
        let sensor = ScriptedSensor.alwaysMatching()
        let result = await check(fixture, sensor: sensor)
        #expect(result.error == .lockedOut(LockoutInfo(remaining: .seconds(900), passphraseOnly: false)))
        #expect(sensor.callCount == 0)
        #expect(failing.callCount == 3)

        let last = try #require(fixture.audit.events.last)
        #expect(last.kind == .authenticationAttempt)
        #expect(last.outcome == .denied)
        #expect(last.subject == nil)
        #expect(last.reason == "verify: locked out (900 s remaining)")
    }

    @Test("a lockout started by item reads also refuses a bare check, and the reverse")
    func sharedCounter() async throws {
        let fixture = Fixture()
        let never = ScriptedSensor.neverMatching()
        _ = await fixture.read(item(.biometryAny), sensor: never)
        _ = await check(fixture, sensor: never)
        #expect(try fixture.status().consecutiveFailures == 2)
        #expect(await fixture.read(item(.biometryAny), sensor: never).error
            == .lockedOut(LockoutInfo(remaining: .seconds(900), passphraseOnly: false)))
        let matching = ScriptedSensor.alwaysMatching()
        #expect(await check(fixture, sensor: matching).error
            == .lockedOut(LockoutInfo(remaining: .seconds(900), passphraseOnly: false)))
        #expect(await fixture.read(item(.biometryAny), sensor: matching).error
            == .lockedOut(LockoutInfo(remaining: .seconds(900), passphraseOnly: false)))
        #expect(matching.callCount == 0)
    }

    @Test("no-matches are counted and the third starts the lockout, audited lockout.start")
    func noMatchCountedUntilLockout() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.neverMatching()
        #expect(await check(fixture, sensor: sensor).error == .authenticationFailed(.noMatch(attemptsBeforeLockout: 2)))
        #expect(await check(fixture, sensor: sensor).error == .authenticationFailed(.noMatch(attemptsBeforeLockout: 1)))
        #expect(fixture.events(.lockoutStarted).isEmpty)
        #expect(await check(fixture, sensor: sensor).error
            == .lockedOut(LockoutInfo(remaining: .seconds(900), passphraseOnly: false)))
        #expect(sensor.callCount == 3)

        let status = try fixture.status()
        #expect(status.consecutiveFailures == 3)
        #expect(status.cumulativeFailures == 3)
        #expect(status.lockout == LockoutInfo(remaining: .seconds(900), passphraseOnly: false))

        let attempts = fixture.events(.authenticationAttempt)
        #expect(attempts.map(\.outcome) == [.failure, .failure, .failure])
        #expect(attempts.allSatisfy { $0.reason == "verify: no match" && $0.subject == nil })
        let started = try #require(fixture.events(.lockoutStarted).first)
        #expect(fixture.events(.lockoutStarted).count == 1)
        #expect(started.reason == "3 consecutive failures: locked for 900 s")
        // The lockout record follows the attempt that caused it.
        #expect(fixture.audit.events.map(\.kind).suffix(2) == [.authenticationAttempt, .lockoutStarted])
    }

    @Test("after 20 failures only the passphrase lifts the lockout; bare checks are refused meanwhile")
    func passphraseOnlyLockoutRefuses() async throws {
        let fixture = Fixture()
        let never = ScriptedSensor.neverMatching()
        for _ in 0..<6 {
            for _ in 0..<3 { _ = await check(fixture, sensor: never) }
            fixture.clock.advance(by: .seconds(15 * 60))
        }
        #expect(try fixture.status().cumulativeFailures == 18)
        #expect(await check(fixture, sensor: never).error == .authenticationFailed(.noMatch(attemptsBeforeLockout: 1)))
        #expect(await check(fixture, sensor: never).error == .lockedOut(LockoutInfo(remaining: nil, passphraseOnly: true)))
        #expect(fixture.events(.lockoutStarted).last?.reason
            == "20 failures since the last passphrase entry: passphrase required")
        #expect(never.callCount == 20)

        // A day later the reader is still not asked.
        fixture.clock.advance(by: .seconds(24 * 3600))
        let matching = ScriptedSensor.alwaysMatching()
        #expect(await check(fixture, sensor: matching).error == .lockedOut(LockoutInfo(remaining: nil, passphraseOnly: true)))
        #expect(matching.callCount == 0)
        let refusal = try #require(fixture.audit.events.last)
        #expect(refusal.kind == .authenticationAttempt)
        #expect(refusal.outcome == .denied)
        #expect(refusal.reason == "verify: locked out until passphrase entry")

        _ = try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        #expect(await check(fixture, sensor: matching).value?.matchedPrint == "finger-1")
        #expect(matching.callCount == 1)
    }

    @Test("a match resets the consecutive count, not the cumulative one")
    func matchResetsConsecutive() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor([.success(.noMatch), .success(.noMatch), .success(.match("finger-2"))])
        _ = await check(fixture, sensor: sensor)
        _ = await check(fixture, sensor: sensor)
        #expect(try fixture.status().consecutiveFailures == 2)
        #expect(await check(fixture, sensor: sensor).value?.matchedPrint == "finger-2")
        let status = try fixture.status()
        #expect(status.consecutiveFailures == 0)
        #expect(status.cumulativeFailures == 2)
        // Two more failures do not lock: the count restarted.
        let never = ScriptedSensor.neverMatching()
        _ = await check(fixture, sensor: never)
        #expect(await check(fixture, sensor: never).error == .authenticationFailed(.noMatch(attemptsBeforeLockout: 1)))
        #expect(try fixture.status().lockout == nil)
    }

    @Test("poor captures are retried up to 5 scans in all, then poorCapture, not counted")
    func retryBudget() async throws {
        let fixture = Fixture()
        let recovers = ScriptedSensor(
            Array(repeating: .failure(.retry(.centerFinger)), count: 4) + [.success(.match("finger-3"))])
        #expect(await check(fixture, sensor: recovers).value?.matchedPrint == "finger-3")
        #expect(recovers.callCount == 5)

        let poor = ScriptedSensor(
            Array(repeating: .failure(.retry(.tooShort)), count: 5), then: .success(.match("finger-1")))
        #expect(await check(fixture, sensor: poor).error == .authenticationFailed(.poorCapture(attempts: 5)))
        #expect(poor.callCount == 5)
        #expect(poor.remainingSteps == 0)
        let status = try fixture.status()
        #expect(status.consecutiveFailures == 0)
        #expect(status.cumulativeFailures == 0)
        let last = try #require(fixture.audit.events.last)
        #expect(last.kind == .authenticationAttempt)
        #expect(last.outcome == .error)
        #expect(last.reason == "verify: poor capture after 5 attempts (not counted)")
    }

    @Test("a smaller configured scan budget applies to bare checks too")
    func configuredBudget() async throws {
        let fixture = Fixture(configuration: try PolicyConfiguration(maximumScans: 2))
        let sensor = ScriptedSensor.failing(with: .retry(.general))
        #expect(await check(fixture, sensor: sensor).error == .authenticationFailed(.poorCapture(attempts: 2)))
        #expect(sensor.callCount == 2)
    }

    @Test(
        "cancel, timeout and unplug are not counted, and are audited as errors",
        arguments: [
            (SensorError.cancelled, AuthorizationError.cancelled, "verify: cancelled (not counted)"),
            (.timeout, .authenticationFailed(.timedOut), "verify: timed out waiting for a finger (not counted)"),
            (.disconnected, .readerDisconnected, "verify: reader disconnected (not counted)"),
            (.unavailable, .readerUnavailable, "verify: reader unavailable (not counted)"),
        ])
    func uncounted(sensorError: SensorError, expected: AuthorizationError, reason: String) async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.failing(with: sensorError)
        for _ in 0..<4 {
            #expect(await check(fixture, sensor: sensor).error == expected)
        }
        #expect(sensor.callCount == 4)
        let status = try fixture.status()
        #expect(status.consecutiveFailures == 0)
        #expect(status.cumulativeFailures == 0)
        #expect(status.lockout == nil)
        let attempts = fixture.events(.authenticationAttempt)
        #expect(attempts.count == 4)
        #expect(attempts.allSatisfy { $0.outcome == .error && $0.reason == reason })
        #expect(fixture.events(.lockoutStarted).isEmpty)
    }

    @Test("a cancelled task is not counted and never reaches the reader")
    func cancelledTask() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await check(fixture, sensor: sensor)
        }
        #expect(await task.value.error == .cancelled)
        #expect(sensor.callCount == 0)
        #expect(try fixture.status().consecutiveFailures == 0)
        #expect(fixture.events(.authenticationAttempt).map(\.outcome) == [.error])
    }

    @Test("nothing enrolled and no reader are refused before asking, and audited")
    func refusalsBeforeAsking() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        #expect(await check(fixture, sensor: sensor, enrollment: EnrollmentStatus(state: Fixture.stateA, printCount: 0)).error
            == .nothingEnrolled)
        #expect(sensor.callCount == 0)
        #expect(await check(fixture, sensor: nil).error == .readerUnavailable)
        let attempts = fixture.events(.authenticationAttempt)
        #expect(attempts.map(\.outcome) == [.denied, .error])
        #expect(attempts.map(\.reason) == ["verify: nothing enrolled", "verify: reader unavailable"])
        #expect(try fixture.status().consecutiveFailures == 0)
    }

    @Test("no passphrase since boot (or an expired one) does not block a bare check")
    func noPassphraseFreshnessRule() async throws {
        let fixture = Fixture(passphraseEntered: false)
        let sensor = ScriptedSensor.alwaysMatching()
        // An item read with a finger alone is refused: the check is not.
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .passphraseRequired(.notEnteredSinceBoot))
        #expect(await check(fixture, sensor: sensor).value?.matchedPrint == "finger-1")

        let expired = Fixture()
        expired.clock.advance(by: .seconds(73 * 3600))
        #expect(await expired.read(item(.biometryAny), sensor: sensor).error == .passphraseRequired(.expired))
        #expect(await check(expired, sensor: sensor).value != nil)
    }

    @Test("a bare check neither starts nor refreshes a session: the next read asks the reader again")
    func noSession() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = try #require(await check(fixture, sensor: sensor).value)
        #expect(try fixture.status().sessionActive == false)
        let grant = try #require(await fixture.read(item(.biometryAny), sensor: sensor).value)
        #expect(!grant.reusedSession)
        #expect(sensor.callCount == 2)

        // With a session running (from that read), a check does not extend it.
        fixture.clock.advance(by: .seconds(100))
        _ = try #require(await check(fixture, sensor: sensor).value)
        fixture.clock.advance(by: .seconds(100))
        _ = try #require(await check(fixture, sensor: sensor).value)
        // 200 s after the read's touch but 100 s after the last check: the idle limit
        // (120 s) counts from the read, so the session has ended.
        #expect(try fixture.status().sessionActive == false)
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).value?.reusedSession == false)
    }

    @Test("a check is not satisfied by a running session: it always asks the reader")
    func sessionNotReused() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = try #require(await fixture.read(item(.biometryAny), sensor: sensor).value)
        #expect(try fixture.status().sessionActive)
        _ = try #require(await check(fixture, sensor: sensor).value)
        #expect(sensor.callCount == 2)
    }
}
