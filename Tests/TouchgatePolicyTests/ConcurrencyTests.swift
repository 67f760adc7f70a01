import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Concurrent attempts on a shared store")
struct ConcurrencyTests {
    @Test("every concurrent failed attempt is counted")
    func concurrentFailuresCounted() async throws {
        let configuration = try PolicyConfiguration(lockoutThreshold: 20, passphraseOnlyThreshold: 100)
        let fixture = Fixture(configuration: configuration)
        let sensor = ScriptedSensor.neverMatching()
        let evaluator = fixture.evaluator
        let enrollment = fixture.enrollment
        let failures = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<15 {
                group.addTask {
                    do {
                        _ = try await evaluator.authorize(
                            item: item(.biometryAny, name: "item-\(index)"), enrollment: enrollment,
                            sensor: sensor, passphrase: nil)
                        return false
                    } catch {
                        return (error as? AuthorizationError)?.isNoMatch ?? false
                    }
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(failures == 15)
        #expect(sensor.callCount == 15)
        let status = try fixture.status()
        #expect(status.consecutiveFailures == 15)
        #expect(status.cumulativeFailures == 15)
    }

    @Test("with a low threshold every attempt that reached the reader is counted, and one lockout starts")
    func concurrentLockout() async throws {
        let fixture = Fixture()
        let sensor = ScriptedSensor.neverMatching()
        let evaluator = fixture.evaluator
        let enrollment = fixture.enrollment
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    _ = try? await evaluator.authorize(
                        item: item(.biometryAny), enrollment: enrollment, sensor: sensor, passphrase: nil)
                }
            }
        }
        let status = try fixture.status()
        #expect(status.cumulativeFailures == sensor.callCount)
        #expect(sensor.callCount >= 3)
        #expect(status.lockout != nil)
        #expect(fixture.events(.lockoutStarted).count == 1)
    }

    @Test("the in-memory store's update is atomic under contention")
    func storeAtomic() async throws {
        let store = InMemoryPolicyStateStore()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try? store.update { $0.lockout.cumulativeFailures += 1 }
                }
            }
        }
        #expect(try store.read().lockout.cumulativeFailures == 200)
    }

    @Test("a throwing update body leaves the stored state unchanged")
    func storeRollback() throws {
        struct Boom: Error {}
        let store = InMemoryPolicyStateStore()
        #expect(throws: Boom.self) {
            try store.update { state in
                state.lockout.cumulativeFailures = 7
                throw Boom()
            }
        }
        #expect(store.snapshot.lockout.cumulativeFailures == 0)
    }
}

extension AuthorizationError {
    var isNoMatch: Bool {
        if case .authenticationFailed(.noMatch) = self { return true }
        return false
    }
}
