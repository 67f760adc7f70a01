import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Clocks")
struct ClockTests {
    @Test("the system clock reads the kernel boot id and a boot time that moves forward")
    func systemClock() async throws {
        let path = "/proc/sys/kernel/random/boot_id"
        let expected = try #require(
            try? String(contentsOfFile: path, encoding: .utf8), "this test needs Linux /proc (\(path))")
        let clock = SystemClock()
        #expect(clock.bootID.rawValue == expected.trimmingCharacters(in: .whitespacesAndNewlines))
        let first = clock.bootTime
        try await Task.sleep(for: .milliseconds(20))
        let second = clock.bootTime
        #expect(second - first >= .milliseconds(15))
        #expect(first > .zero)
        #expect(abs(clock.wallTime.timeIntervalSinceNow) < 5)
    }

    @Test("the boot id is read trimmed; an unreadable or empty file gives none")
    func bootIDFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("boot-id-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(SystemClock.readBootID(path: path) == nil)
        try " \n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(SystemClock.readBootID(path: path) == nil)
        try "0d5f-boot\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(SystemClock.readBootID(path: path) == "0d5f-boot")
        #expect(SystemClock(bootIDPath: path).bootID == "0d5f-boot")
        #expect(SystemClock.readBootID() == SystemClock().bootID)
    }

    @Test("a duration converts to seconds as a Double, fraction included")
    func durationInSeconds() {
        #expect(Duration.zero.timeInterval == 0)
        #expect(Duration.milliseconds(1500).timeInterval == 1.5)
        #expect(Duration.nanoseconds(-250_000_000).timeInterval == -0.25)
        #expect(Duration.seconds(72 * 3600).timeInterval == 259_200)
        let now = SystemClock.readBootTime()
        #expect(abs(now.timeInterval - Double(now.components.seconds)) < 1)
    }

    @Test("an unreadable boot id gives a unique unknown id (every process a new boot)")
    func unreadableBootID() {
        let one = SystemClock(bootIDPath: "/nonexistent/boot_id")
        let two = SystemClock(bootIDPath: "/nonexistent/boot_id")
        #expect(one.bootID.rawValue.hasPrefix("unknown-"))
        #expect(one.bootID != two.bootID)
    }

    @Test("the manual clock moves wall and boot time together, the wall alone, or reboots")
    func manualClock() {
        let clock = ManualClock(wallTime: Date(timeIntervalSince1970: 1000), bootTime: .seconds(5), bootID: "b1")
        clock.advance(by: .milliseconds(1500))
        #expect(clock.wallTime == Date(timeIntervalSince1970: 1001.5))
        #expect(clock.bootTime == .milliseconds(6500))
        clock.setWallTime(Date(timeIntervalSince1970: 0))
        #expect(clock.bootTime == .milliseconds(6500))
        clock.reboot(bootID: "b2", uptime: .seconds(1))
        #expect(clock.monotonicNow == MonotonicInstant(bootID: "b2", sinceBoot: .seconds(1)))
        #expect(MonotonicInstant(bootID: "b2", sinceBoot: .seconds(4)).elapsed(since: clock.monotonicNow) == .seconds(3))
        #expect(MonotonicInstant(bootID: "b1", sinceBoot: .seconds(4)).elapsed(since: clock.monotonicNow) == nil)
    }

    @Test("policy state survives a JSON round trip, as a store may keep it")
    func stateCodable() throws {
        let state = PolicyState(
            lockout: LockoutState(consecutiveFailures: 2, cumulativeFailures: 5,
                                  lockedUntil: MonotonicInstant(bootID: "b", sinceBoot: .seconds(99))),
            session: SessionState(
                biometry: BiometricProof(
                    matchedAt: MonotonicInstant(bootID: "b", sinceBoot: .seconds(1)), printID: "f",
                    enrollmentState: Fixture.stateA),
                lastActivity: MonotonicInstant(bootID: "b", sinceBoot: .seconds(2))),
            lastPassphraseEntry: MonotonicInstant(bootID: "b", sinceBoot: .milliseconds(500)))
        let decoded = try JSONDecoder().decode(PolicyState.self, from: JSONEncoder().encode(state))
        #expect(decoded == state)
    }
}
