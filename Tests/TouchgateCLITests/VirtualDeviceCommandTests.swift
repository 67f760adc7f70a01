import Foundation
import Testing
import TouchgateTestSupport

/// The reader commands on libfprint's virtual_device driver, whose finger status toggles
/// differently from virtual_image's: the tool must still prompt exactly once per wait.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct VirtualDeviceCommandTests {
    @Test func enrollAndVerifyPromptOncePerWait() async throws {
        let home = try TemporaryDirectory("touchgate-vdev")
        defer { home.remove() }
        let socket = home.path("virtual-device.socket")
        let process = CLIProcess(environment: [
            "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"),
            "FP_VIRTUAL_DEVICE": socket, "FP_DRIVERS_WHITELIST": "virtual_device",
        ])
        let client = VirtualDeviceClient(socketPath: socket)
        /// On the first prompt, queue `commands` (the driver takes one per connection, in order).
        func answering(_ commands: [String]) -> @Sendable (String, RunningProcess) -> Void {
            let sent = LockedFlag()
            return { line, _ in
                guard VirtualImageFinger.isPrompt(line), sent.setOnce() else { return }
                for command in commands { _ = try? client.send(command, expectReply: true) }
            }
        }
        let enroll = try await process.run(["enroll", "--json"],
                                           onStderrLine: answering(Array(repeating: "SCAN finger-a", count: 5)))
        #expect(enroll.status == 0, "\(enroll.stderrLines)")
        #expect(enroll.eventNames.filter { $0 == "enroll-stage" }.count == 5)

        let match = try await process.run(["verify", "--json"], onStderrLine: answering(["SCAN finger-a"]))
        #expect(match.status == 0, "\(match.stderrLines)")
        #expect(match.eventNames.filter { $0 == "finger-needed" }.count == 1)

        let other = try await process.run(["verify", "--json"], onStderrLine: answering(["SCAN finger-b"]))
        #expect(other.status == 1)
        #expect(other.eventNames.filter { $0 == "finger-needed" }.count == 1)
    }
}

/// A thread-safe one-shot flag.
final class LockedFlag: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = false

    func setOnce() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if value { return false }
        value = true
        return true
    }
}
