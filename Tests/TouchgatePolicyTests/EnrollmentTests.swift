import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Enrollment state binding and enrollment changes")
struct EnrollmentTests {
    @Test("after an enrollment change, current-set items are invalid and any-finger items still open")
    func currentSetInvalidated() async throws {
        var fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        let bound = item(.biometryCurrentSet, name: "bank", bound: Fixture.stateA)
        #expect(await fixture.read(bound, sensor: sensor).value != nil)

        fixture.enrollment = EnrollmentStatus(state: Fixture.stateB, printCount: 3)
        try fixture.evaluator.recordEnrollmentChange(.enroll, print: "finger-3", newState: Fixture.stateB)
        // The record says what happened to the finger it names, then what the set became.
        let recorded = try #require(fixture.audit.events.last)
        #expect(recorded.subject == "finger-3" && recorded.reason.hasPrefix("added to the enrolled set, which is now "),
                "\(recorded.reason)")
        try fixture.evaluator.recordEnrollmentChange(.delete, print: "finger-3", newState: Fixture.stateB)
        #expect(try #require(fixture.audit.events.last).reason.hasPrefix("deleted from the enrolled set, which is now "))
        let callsBefore = sensor.callCount
        #expect(await fixture.read(bound, sensor: sensor).error == .itemInvalidated(item: "bank"))
        #expect(
            await fixture.read(
                item(.or(.biometryCurrentSet, .passphrase), name: "bank2"), sensor: sensor,
                passphrase: ScriptedPassphraseVerifier.accepting()
            ).error == .itemInvalidated(item: "bank2"))
        #expect(sensor.callCount == callsBefore)
        #expect(bound.validity(current: Fixture.stateB) != .valid)

        let any = try #require(await fixture.read(item(.biometryAny, name: "wifi", bound: nil), sensor: sensor).value)
        #expect(any.factors == [.biometry])
        #expect(!any.reusedSession)  // the proof from the old set was voided
        #expect(fixture.events(.itemRead).contains { $0.subject == "bank" && $0.outcome == .denied })
    }

    @Test("a current-set item with no recorded state is invalid; items without currentSet ignore the state")
    func validityRules() {
        #expect(item(.biometryCurrentSet, bound: nil).validity(current: Fixture.stateA) != .valid)
        #expect(item(.biometryCurrentSet, bound: Fixture.stateA).validity(current: Fixture.stateA) == .valid)
        #expect(item(.userPresence, bound: Fixture.stateB).validity(current: Fixture.stateA) == .valid)
    }

    @Test("a session's fingerprint proof does not carry over to a changed enrolled set")
    func sessionBoundToState() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        // Another process changed the set without telling this evaluator.
        let changed = EnrollmentStatus(state: Fixture.stateB, printCount: 1)
        let grant = try #require(await fixture.read(item(.biometryAny), sensor: sensor, enrollment: changed).value)
        #expect(!grant.reusedSession)
        #expect(sensor.callCount == 2)
    }

    @Test("nothing enrolled refuses fingerprint policies without asking the reader")
    func nothingEnrolled() async {
        let fixture = Fixture()
        let sensor = ScriptedSensor.alwaysMatching()
        let empty = EnrollmentStatus(state: Fixture.stateA, printCount: 0)
        #expect(await fixture.read(item(.biometryAny), sensor: sensor, enrollment: empty).error == .nothingEnrolled)
        #expect(sensor.callCount == 0)
        let fallback = await fixture.read(
            item(.userPresence), sensor: sensor, passphrase: ScriptedPassphraseVerifier.accepting(), enrollment: empty)
        #expect(fallback.value?.factors == [.passphrase])
    }

    @Test("enrolling or deleting a finger needs the passphrase once a vault exists")
    func enrollmentNeedsPassphrase() async throws {
        let fixture = Fixture()
        // A live session is not enough.
        _ = try await fixture.evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        await #expect(throws: AuthorizationError.passphraseRequired(.enrollmentChange)) {
            try await fixture.evaluator.authorizeEnrollmentChange(.enroll, vaultExists: true, passphrase: nil)
        }
        await #expect(throws: AuthorizationError.authenticationFailed(.wrongPassphrase)) {
            try await fixture.evaluator.authorizeEnrollmentChange(
                .delete, vaultExists: true, passphrase: ScriptedPassphraseVerifier.rejecting())
        }
        let verifier = ScriptedPassphraseVerifier.accepting()
        let grant = try await fixture.evaluator.authorizeEnrollmentChange(.delete, vaultExists: true, passphrase: verifier)
        #expect(grant.factors == [.passphrase])
        #expect(verifier.callCount == 1)
        #expect(fixture.events(.fingerEnrolled).last?.outcome == .denied)
        #expect(fixture.events(.fingerDeleted).last?.outcome == .failure)

        let first = ScriptedPassphraseVerifier.rejecting()
        let initial = try await fixture.evaluator.authorizeEnrollmentChange(.enroll, vaultExists: false, passphrase: first)
        #expect(initial.factors.isEmpty)
        #expect(first.callCount == 0)
    }

    @Test("the computed enrollment state is canonical and changes with every enroll and delete")
    func computedState() {
        let identity: ([UInt8]) -> [UInt8] = { $0 }
        let one = EnrollmentState(generation: 1, printIDs: ["b", "a"], hash: identity)
        #expect(one == EnrollmentState(generation: 1, printIDs: ["a", "b"], hash: identity))
        #expect(one != EnrollmentState(generation: 2, printIDs: ["a", "b"], hash: identity))
        #expect(one != EnrollmentState(generation: 1, printIDs: ["a"], hash: identity))
        // Length prefixes keep ["ab"] and ["a", "b"] apart.
        #expect(
            EnrollmentState(generation: 1, printIDs: ["ab"], hash: identity)
                != EnrollmentState(generation: 1, printIDs: ["a", "b"], hash: identity))
        #expect(one.digest.prefix(8) == [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(EnrollmentState(hex: one.hexString) == one)
        #expect(EnrollmentState(hex: "0aFf")?.digest == [0x0a, 0xff])
        #expect(EnrollmentState(hex: "abc") == nil)
        #expect(EnrollmentState(hex: "zz") == nil)
    }
}
