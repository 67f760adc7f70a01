import FingerprintKit
import Testing
@testable import TouchgateService
import TouchgateAPI

/// The wait for a finger ends an unattended reader operation, but never the match of a scan
/// taken: a large gallery's identify takes most of a minute on an idle machine.
@Suite("the wait for a finger")
struct FingerWaitTests {
    @Test("untouched, the operation ends with timed-out")
    func untouchedTimesOut() async throws {
        let wait = FingerWait(timeout: .milliseconds(200), reader: "test reader")
        await #expect(throws: ServiceError.self) {
            try await wait.bounding {
                wait.activity(.fingerStatus(.needed))
                try await Task.sleep(for: .seconds(10))
                return 1
            }
        }
    }

    @Test("a finger put on and lifted: the match that follows runs past the wait, to its end")
    func matchingIsNotWaiting() async throws {
        let wait = FingerWait(timeout: .milliseconds(200), reader: "test reader")
        let value = try await wait.bounding {
            wait.activity(.fingerStatus(.needed))
            wait.activity(.fingerStatus([.needed, .present]))
            wait.activity(.fingerStatus([]))
            // Five timeouts: past the wait, inside the match's allowance of ten.
            try await Task.sleep(for: .seconds(1))
            return 7
        }
        #expect(value == 7)
    }

    @Test("a reader asking for the finger again after a match (a retry) is bounded again")
    func askingAgainIsBounded() async throws {
        let wait = FingerWait(timeout: .milliseconds(200), reader: "test reader")
        await #expect(throws: ServiceError.self) {
            try await wait.bounding {
                wait.activity(.fingerStatus(.needed))
                wait.activity(.fingerStatus(.present))
                wait.activity(.fingerStatus([]))
                wait.activity(.fingerStatus(.needed))
                try await Task.sleep(for: .seconds(10))
                return 1
            }
        }
    }
}

extension FingerWaitTests {
    @Test("a reader stuck after the scan (never finishing its match) is ended after ten timeouts")
    func aStuckMatchEnds() async throws {
        let wait = FingerWait(timeout: .milliseconds(100), reader: "test reader")
        await #expect(throws: ServiceError.self) {
            try await wait.bounding {
                wait.activity(.fingerStatus(.present))
                wait.activity(.fingerStatus([]))
                try await Task.sleep(for: .seconds(30))
                return 1
            }
        }
    }
}
