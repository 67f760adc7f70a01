import Foundation
import Testing
import TouchgateTestSupport

/// One `finger-needed` prompt each time the reader waits for a scan, on real libfprint
/// drivers whose finger status reports differ: libfprint's virtual_device (it reports
/// "needed" at the start only, then "present" on and off around every scan, and nothing
/// after a retry) and a replay of a real fpcmoc reader (the same, and it finishes
/// enrollment in 12 of the 25 stages it announces).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PromptTests {
    /// A virtual_device reader in a private HOME whose "person" answers each prompt with the
    /// next command of a script (`SCAN id` for a good scan, `RETRY code` for a poor one).
    struct ScriptedReader {
        let home: TemporaryDirectory
        let process: CLIProcess
        let client: VirtualDeviceClient

        init() throws {
            home = try TemporaryDirectory("touchgate-prompts")
            let socket = home.path("virtual-device.socket")
            process = CLIProcess(environment: [
                "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"),
                "FP_VIRTUAL_DEVICE": socket, "FP_DRIVERS_WHITELIST": "virtual_device",
            ])
            client = VirtualDeviceClient(socketPath: socket)
        }

        /// Runs touchgate, sending the next of `script` on each prompt (nothing once it runs out,
        /// so a missing prompt stalls the run and a surplus one is counted).
        func run(_ arguments: [String], answering script: [String]) async throws -> CLIResult {
            let queue = CommandQueue(script)
            let client = self.client
            return try await process.run(arguments, timeout: 30) { line, _ in
                guard VirtualImageFinger.isPrompt(line), let command = queue.next() else { return }
                _ = try? client.send(command, expectReply: true)
            }
        }
    }

    /// The `finger-needed` and `enroll-stage` events in order: `ask 2/5`, `done 2/5`, `retry`.
    static func transcript(_ result: CLIResult) -> [String] {
        result.events.compactMap { event in
            switch event["event"] as? String {
            case "finger-needed":
                guard let stage = event["stage"] as? Int, let stages = event["stages"] as? Int else { return "ask" }
                return "ask \(stage)/\(stages)"
            case "enroll-stage":
                return "done \(event["completed"] as? Int ?? -1)/\(event["total"] as? Int ?? -1)"
            case "retry":
                return "retry"
            default:
                return nil
            }
        }
    }

    @Test func enrollPromptsEveryScanOfADriverThatReportsNeededOnlyAtTheStart() async throws {
        let reader = try ScriptedReader()
        defer { reader.home.remove() }
        let result = try await reader.run(["enroll", "--json"], answering: Array(repeating: "SCAN finger-a", count: 5))
        #expect(result.status == 0, "\(result.stderrLines)")
        // Before: one prompt at the start, then each one after the touch it asked for.
        #expect(Self.transcript(result) == (1...5).flatMap { ["ask \($0)/5", "done \($0)/5"] })
    }

    @Test func enrollPromptsAgainAfterEveryRetry() async throws {
        let reader = try ScriptedReader()
        defer { reader.home.remove() }
        let script = ["SCAN finger-a", "RETRY 1", "SCAN finger-a", "RETRY 2", "RETRY 3", "SCAN finger-a",
                      "SCAN finger-a", "SCAN finger-a"]
        let result = try await reader.run(["enroll", "--json"], answering: script)
        #expect(result.status == 0, "\(result.stderrLines)")
        #expect(Self.transcript(result) == ["ask 1/5", "done 1/5", "ask 2/5", "retry", "ask 2/5", "done 2/5",
                                            "ask 3/5", "retry", "ask 3/5", "retry", "ask 3/5", "done 3/5",
                                            "ask 4/5", "done 4/5", "ask 5/5", "done 5/5"])
        #expect(result.eventNames.filter { $0 == "finger-needed" }.count == script.count, "one prompt per scan")
    }

    @Test func verifyPromptsEachAttempt() async throws {
        let reader = try ScriptedReader()
        defer { reader.home.remove() }
        let enroll = try await reader.run(["enroll", "--json"], answering: Array(repeating: "SCAN finger-a", count: 5))
        #expect(enroll.status == 0, "\(enroll.stderrLines)")
        let verify = try await reader.run(["verify", "--json"], answering: ["RETRY 2", "SCAN finger-a"])
        #expect(verify.status == 0, "\(verify.stderrLines)")
        #expect(Self.transcript(verify) == ["ask", "retry", "ask"])
        let text = try await reader.run(["verify"], answering: ["SCAN finger-a"])
        #expect(text.status == 0, "\(text.stderrLines)")
        #expect(text.stderrLines.filter(VirtualImageFinger.isPrompt).count == 1, "\(text.stderrLines)")
    }

    /// `touchgate enroll` on libfprint's recording of an FPC match-on-chip reader, replayed
    /// by umockdev: one prompt for each of the 15 scans the recording holds (12 good, 3
    /// poor), each before its result, and a last progress event with the 12 stages it used.
    ///
    /// The recording was made by libfprint's own test, which clears the reader's storage
    /// after opening it and enrolls with no finger and no user. The copy replayed here
    /// leaves out the clearing (its DELETE_DB and re-created database, requests 0x62 and
    /// 0x60) and names the right index finger in the user id the driver binds to the
    /// print (`FP1-00000000-7-00000000-nobody`), so that it is what `touchgate enroll
    /// --user nobody --finger right-index` sends.
    @Test func enrollOnTheFpcmocReplayPromptsEveryRecordedScan() async throws {
        let umockdev = try #require(Tools.path("umockdev-run"), "umockdev-run not found: apt-get install umockdev")
        let home = try TemporaryDirectory("touchgate-fpcmoc")
        defer { home.remove() }
        let recording = Fixtures.recording("fpcmoc")
        let replay = home.path("enroll.pcapng")
        try Self.enrollOnly(recording.appendingPathComponent("custom.pcapng")).write(to: URL(fileURLWithPath: replay))
        let device = try String(contentsOf: recording.appendingPathComponent("device"), encoding: .utf8)
        let sysfs = try #require(device.split(separator: "\n").first { $0.hasPrefix("P: ") }?.dropFirst(3))
        var process = CLIProcess(environment: [
            "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"),
            "FP_DEVICE_EMULATION": "1", "FP_DRIVERS_WHITELIST": "fpcmoc",
        ])
        process.wrapper = [umockdev, "-d", recording.appendingPathComponent("device").path,
                           "-p", "/sys\(sysfs)=\(replay)", "--"]
        let result = try await process.run(["enroll", "--json", "--user", "nobody", "--finger", "right-index"], timeout: 60)
        #expect(result.status == 0, "\(result.stderrLines)")
        var expected: [String] = []
        for stage in 1...12 {
            if [6, 8, 11].contains(stage) { expected += ["ask \(stage)/25", "retry"] }
            expected += ["ask \(stage)/25", "done \(stage)/25"]
        }
        #expect(Self.transcript(result) == expected + ["done 12/12"])
        #expect(result.json?["on-device"] as? Bool == true)
    }

    /// The fpcmoc recording without its storage clearing, and with the user id of a right
    /// index finger (see above). Reads the pcapng's blocks; drops the enhanced packet blocks
    /// of the clearing, checked by their USB setup bytes so that a changed fixture fails here.
    static func enrollOnly(_ url: URL) throws -> Data {
        let data = try Data(contentsOf: url)
        var output = Data()
        var offset = 0
        var packet = 0
        var dropped: [String] = []
        func word(_ at: Int) -> Int {
            Int(data[at]) | Int(data[at + 1]) << 8 | Int(data[at + 2]) << 16 | Int(data[at + 3]) << 24
        }
        while offset + 8 <= data.count {
            let type = word(offset), length = word(offset + 4)
            let block = data[offset..<(offset + length)]
            if type == 6 {  // enhanced packet block: 28 bytes of header, then the usbmon packet
                if (28...31).contains(packet) {
                    // usbmon: setup packet at 40 (bmRequestType, bRequest) for submissions.
                    let setup = data[(offset + 28 + 40)..<(offset + 28 + 42)]
                    dropped.append(setup.map { String(format: "%02x", $0) }.joined())
                } else {
                    output.append(block)
                }
                packet += 1
            } else {
                output.append(block)
            }
            offset += length
        }
        // Submissions of vendor OUT requests 0x62 (delete the database) and 0x60 (make it
        // anew), and their completions (no setup).
        guard dropped.count == 4, dropped[0] == "4062", dropped[2] == "4060" else {
            throw FixtureChanged(description: "the fpcmoc recording changed: dropped \(dropped)")
        }
        let recorded = Data("FP1-00000000-0-00000000-nobody".utf8)
        let rightIndex = Data("FP1-00000000-7-00000000-nobody".utf8)
        var patched = output
        var searchFrom = patched.startIndex
        var replaced = 0
        while let range = patched.range(of: recorded, in: searchFrom..<patched.endIndex) {
            patched.replaceSubrange(range, with: rightIndex)
            searchFrom = range.upperBound
            replaced += 1
        }
        guard replaced > 0 else { throw FixtureChanged(description: "no user id in the fpcmoc recording") }
        return patched
    }
}

/// A fixture no longer holds what a test edits in it.
struct FixtureChanged: Error, CustomStringConvertible {
    let description: String
}

/// Commands handed out one at a time, from any thread.
final class CommandQueue: @unchecked Sendable {
    // @unchecked Sendable: `commands` is only touched under `lock`.
    private let lock = NSLock()
    private var commands: [String]

    init(_ commands: [String]) { self.commands = commands }

    func next() -> String? {
        lock.withLock { commands.isEmpty ? nil : commands.removeFirst() }
    }
}
