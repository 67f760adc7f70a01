import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

/// A store with transactions, as the vault's: each `update` is one transaction (one durable
/// commit in the vault), and a sink handed to `thenRecord` writes inside it. It keeps what
/// each transaction carried.
private final class TransactionLog: PolicyStateStore, @unchecked Sendable {
    // @unchecked Sendable: every field is touched only under `lock`, held for a whole transaction.
    private let lock = NSLock()
    private var state: PolicyState
    /// The records each committed transaction wrote, in commit order.
    private(set) var committed: [[PolicyAuditEvent.Kind]] = []

    init(_ state: PolicyState) { self.state = state }

    private final class InTransaction: AuditSink, @unchecked Sendable {
        var events: [PolicyAuditEvent] = []
        func record(_ event: PolicyAuditEvent) { events.append(event) }
    }

    func update<T>(_ body: (inout PolicyState) throws -> T) throws -> T {
        try update(body) { _, _ in }
    }

    func update<T>(_ body: (inout PolicyState) throws -> T,
                   thenRecord record: (T, (any AuditSink)?) throws -> Void) throws -> T {
        try lock.withLock {
            var copy = state
            let result = try body(&copy)
            let sink = InTransaction()
            try record(result, sink)
            state = copy
            committed.append(sink.events.map(\.kind))
            return result
        }
    }

    var transactions: [[PolicyAuditEvent.Kind]] { lock.withLock { committed } }
}

/// A decision is one commit: its state change and its record go in one transaction, so a
/// signature an agent makes inside the reuse window costs one durable write, not two.
@Suite("Each decision commits once, with its record")
struct OneCommitTests {
    @Test("a touch, a reuse of it, a lock and an unlock: each one transaction carrying its own record")
    func oneTransactionPerDecision() async throws {
        let clock = ManualClock()
        let store = TransactionLog(PolicyState(lastPassphraseEntry: clock.monotonicNow))
        let outside = RecordingAuditSink()
        let evaluator = AccessEvaluator(configuration: .standard, clock: clock, store: store, auditSink: outside,
                                        principal: "uid=1000(alice)")
        let enrollment = EnrollmentStatus(state: Fixture.stateA, printCount: 1)
        let sensor = ScriptedSensor.alwaysMatching()

        _ = try await evaluator.authorize(item: item(.biometryAny), enrollment: enrollment, sensor: sensor, passphrase: nil)
        let afterTouch = store.transactions.count
        clock.advance(by: .seconds(10))
        let reused = try await evaluator.authorize(item: item(.biometryAny), enrollment: enrollment, sensor: sensor,
                                                   passphrase: nil, purpose: "sign a file")
        #expect(reused.reusedSession)
        #expect(store.transactions.count == afterTouch + 1, "a reuse took \(store.transactions.count - afterTouch) commits")
        #expect(store.transactions.last == [.itemRead], "the reuse's record was not in its state's transaction")
        // The touch's grant went with the session it started.
        #expect(store.transactions[afterTouch - 1].last == .itemRead)

        try evaluator.lock()
        #expect(store.transactions.last == [.lock])
        _ = try await evaluator.unlock(passphrase: ScriptedPassphraseVerifier.accepting())
        #expect(store.transactions.last == [.unlock])
        // (A passphrase's attempt is recorded as it is made, before the decision.)
        let decisions = outside.events.map(\.kind).filter { [.itemRead, .lock, .unlock].contains($0) }
        #expect(decisions.isEmpty, "decisions recorded outside their state's transaction: \(decisions)")
    }
}
