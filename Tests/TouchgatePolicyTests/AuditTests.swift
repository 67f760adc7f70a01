import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Audit events")
struct AuditTests {
    @Test("a fresh read records the attempt and the item access, with who, what and when")
    func readEvents() async throws {
        let fixture = Fixture()
        _ = await fixture.read(item(.biometryAny, name: "github-token"), sensor: ScriptedSensor.alwaysMatching("finger-7"))
        let events = fixture.audit.events
        #expect(events.map(\.kind) == [.authenticationAttempt, .itemRead])
        #expect(events[0].factor == .biometry)
        #expect(events[0].outcome == .success)
        #expect(events[0].subject == "finger-7")
        #expect(events[1].subject == "github-token")
        #expect(events[1].outcome == .success)
        #expect(events.allSatisfy { $0.principal == "uid=1000(alice)" })
        #expect(events.allSatisfy { $0.time.monotonic.bootID == "boot-1" })
    }

    @Test("writes, deletes, lockouts, unlock, lock and policy changes are recorded")
    func otherKinds() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = try await fixture.evaluator.authorize(
            item: item(.biometryAny), operation: .write, enrollment: fixture.enrollment, sensor: sensor, passphrase: nil)
        _ = try await fixture.evaluator.authorize(
            item: item(.biometryAny), operation: .delete, enrollment: fixture.enrollment, sensor: sensor, passphrase: nil)
        try fixture.evaluator.recordPolicyChange(item: "api-token", from: .biometryAny, to: .and(.biometryAny, .passphrase))
        try fixture.evaluator.lock(reason: "screen locked")
        for _ in 0..<3 {
            _ = await fixture.read(item(.biometryAny), sensor: ScriptedSensor.neverMatching())
        }
        _ = try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        let kinds = Set(fixture.audit.events.map(\.kind))
        #expect(kinds.isSuperset(of: [
            .itemWrite, .itemDelete, .policyChanged, .lock, .lockoutStarted, .lockoutEnded, .unlock,
            .authenticationAttempt, .itemRead,
        ]))
        #expect(fixture.events(.policyChanged).first?.reason == "biometry-any -> biometry-any&passphrase")
        #expect(fixture.events(.lock).first?.reason == "screen locked")
        #expect(fixture.events(.itemRead).last?.outcome == .denied)  // the read refused by the lockout
    }

    @Test("no event or error text carries the prompt's secret-free inputs beyond names")
    func noSecrets() async throws {
        // The policy core never receives a secret; check that what it writes stays within
        // names and reasons by scanning for the only sensitive-looking inputs it gets.
        let fixture = Fixture()
        _ = await fixture.read(item(.and(.biometryAny, .passphrase), name: "n"), sensor: ScriptedSensor.neverMatching(),
                               passphrase: ScriptedPassphraseVerifier.accepting())
        let data = try JSONEncoder().encode(fixture.audit.events)
        let text = String(decoding: data, as: UTF8.self)
        #expect(!text.isEmpty)
        #expect(!text.lowercased().contains("template"))
        #expect(!text.contains("FP3"))
    }

    @Test("access is denied when the audit log cannot be written")
    func failingSink() async {
        struct Full: Error {}
        let clock = ManualClock()
        let evaluator = AccessEvaluator(
            clock: clock, store: InMemoryPolicyStateStore(PolicyState(lastPassphraseEntry: clock.monotonicNow)),
            auditSink: ClosureAuditSink { _ in throw Full() }, principal: "p")
        await #expect(throws: AuthorizationError.self) {
            try await evaluator.authorize(
                item: item(.biometryAny), enrollment: EnrollmentStatus(state: Fixture.stateA, printCount: 1),
                sensor: ScriptedSensor.alwaysMatching(), passphrase: nil)
        }
        do {
            _ = try await evaluator.authorize(
                item: item(.biometryAny), enrollment: EnrollmentStatus(state: Fixture.stateA, printCount: 1),
                sensor: ScriptedSensor.alwaysMatching(), passphrase: nil)
            Issue.record("expected a refusal")
        } catch {
            guard case .stateUnavailable = error else {
                Issue.record("expected stateUnavailable, got \(error)")
                return
            }
        }
    }

    @Test("access is denied when the state store fails")
    func failingStore() async {
        struct Locked: Error {}
        struct BrokenStore: PolicyStateStore {
            func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T { throw Locked() }
        }
        let sensor = ScriptedSensor.alwaysMatching()
        let evaluator = AccessEvaluator(
            clock: ManualClock(), store: BrokenStore(), auditSink: DiscardingAuditSink(), principal: "p")
        let result: Result<Grant, AuthorizationError>
        do {
            result = .success(try await evaluator.authorize(
                item: item(.biometryAny), enrollment: EnrollmentStatus(state: Fixture.stateA, printCount: 1),
                sensor: sensor, passphrase: nil))
        } catch {
            result = .failure(error)
        }
        #expect(result.error == .stateUnavailable("Locked()"))
        #expect(sensor.callCount == 0)
    }

    @Test("outcomes distinguish a wrong finger, no verdict, and a refusal by policy")
    func outcomes() async throws {
        let fixture = Fixture()
        _ = await fixture.read(item(.biometryAny, name: "a"), sensor: ScriptedSensor.neverMatching())
        _ = await fixture.read(item(.biometryAny, name: "b"), sensor: ScriptedSensor.failing(with: .disconnected))
        _ = await fixture.read(item(.biometryAny, name: "c"), sensor: ScriptedSensor.alwaysMatching(),
                               enrollment: EnrollmentStatus(state: Fixture.stateA, printCount: 0))
        let reads = fixture.events(.itemRead)
        #expect(reads.map(\.subject) == ["a", "b", "c"])
        #expect(reads.map(\.outcome) == [.failure, .error, .denied])
        #expect(fixture.events(.authenticationAttempt).map(\.outcome) == [.failure, .error])
    }

    @Test("events encode with stable kind names")
    func codable() throws {
        #expect(PolicyAuditEvent.Kind.authenticationAttempt.rawValue == "auth.attempt")
        #expect(PolicyAuditEvent.Kind.lockoutStarted.rawValue == "lockout.start")
        let event = PolicyAuditEvent(
            time: ClockReading(wall: Date(timeIntervalSince1970: 0), monotonic: MonotonicInstant(bootID: "b", sinceBoot: .seconds(3))),
            principal: "p", kind: .itemRead, subject: "x", outcome: .success, reason: "r")
        let decoded = try JSONDecoder().decode(PolicyAuditEvent.self, from: JSONEncoder().encode(event))
        #expect(decoded == event)
    }

    @Test("every error has a user message saying what to do, without internal detail")
    func messages() {
        let errors: [AuthorizationError] = [
            .authenticationFailed(.noMatch(attemptsBeforeLockout: 1)), .authenticationFailed(.poorCapture(attempts: 5)),
            .authenticationFailed(.timedOut), .authenticationFailed(.wrongPassphrase), .cancelled,
            .readerUnavailable, .readerDisconnected, .nothingEnrolled,
            .lockedOut(LockoutInfo(remaining: .seconds(125), passphraseOnly: false)),
            .lockedOut(LockoutInfo(remaining: nil, passphraseOnly: true)), .itemInvalidated(item: "bank"),
            .passphraseRequired(.notEnteredSinceBoot), .passphraseRequired(.expired),
            .passphraseRequired(.enrollmentChange), .passphraseRequired(.requiredByPolicy),
            .stateUnavailable("SQLITE_BUSY"),
        ]
        for error in errors {
            #expect(error.userMessage.hasSuffix("."), "\(error)")
            #expect(!error.description.isEmpty)
        }
        #expect(AuthorizationError.lockedOut(LockoutInfo(remaining: .seconds(125), passphraseOnly: false)).userMessage.contains("Try again in 2 min 5 s,"))
        #expect(!AuthorizationError.stateUnavailable("SQLITE_BUSY").userMessage.contains("SQLITE"))
    }
}
