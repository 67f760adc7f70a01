import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

/// A manual clock, an in-memory store, a recording audit sink and an evaluator over them.
struct Fixture {
    static let stateA = EnrollmentState(digest: [0xaa, 0x01])
    static let stateB = EnrollmentState(digest: [0xbb, 0x02])

    let clock: ManualClock
    let store: InMemoryPolicyStateStore
    let audit: RecordingAuditSink
    let evaluator: AccessEvaluator
    var enrollment = EnrollmentStatus(state: Fixture.stateA, printCount: 2)

    /// - Parameter passphraseEntered: whether the passphrase was entered just now (so
    ///   fingerprint-only access is allowed).
    init(configuration: PolicyConfiguration = .standard, passphraseEntered: Bool = true) {
        clock = ManualClock()
        store = InMemoryPolicyStateStore(
            PolicyState(lastPassphraseEntry: passphraseEntered ? clock.monotonicNow : nil))
        audit = RecordingAuditSink()
        evaluator = AccessEvaluator(
            configuration: configuration, clock: clock, store: store, auditSink: audit,
            principal: "uid=1000(alice)")
    }

    /// Authorizes a read, returning the outcome as a `Result`.
    func read(
        _ item: ItemDescriptor, sensor: (any BiometricSensor)?,
        passphrase: (any PassphraseVerifier)? = nil, enrollment: EnrollmentStatus? = nil
    ) async -> Result<Grant, AuthorizationError> {
        do {
            return .success(try await evaluator.authorize(
                item: item, enrollment: enrollment ?? self.enrollment, sensor: sensor, passphrase: passphrase))
        } catch {
            return .failure(error)
        }
    }

    /// The current policy status.
    func status() throws -> PolicyStatus {
        try evaluator.status()
    }

    /// The audit events of a kind.
    func events(_ kind: PolicyAuditEvent.Kind) -> [PolicyAuditEvent] {
        audit.events.filter { $0.kind == kind }
    }
}

/// An item with a unique name.
func item(
    _ policy: AccessPolicy, name: String = "api-token", bound: EnrollmentState? = Fixture.stateA,
    fresh: Bool = false
) -> ItemDescriptor {
    ItemDescriptor(name: name, policy: policy, boundEnrollmentState: bound, requiresFreshTouch: fresh)
}

extension Result {
    /// The error, if this is a failure.
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    /// The value, if this is a success.
    var value: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
