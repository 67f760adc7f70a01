import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// Replays libfprint's recording of a real FPC match-on-chip reader (`fpcmoc`) under
    /// umockdev. umockdev-run preloads itself into a whole process, so the sequence runs in
    /// the `fpcmoc-lifecycle` program, which prints one JSON object per step.
    @Suite struct FpcmocReplay {
        /// The built `fpcmoc-lifecycle`: beside the test bundle, or in `.build/debug`.
        static func program() -> URL? {
            var candidates: [URL] = []
            for path in [Bundle.main.executablePath, CommandLine.arguments.first].compactMap({ $0 }) {
                candidates.append(URL(fileURLWithPath: path).deletingLastPathComponent())
            }
            candidates.append(Fixtures.packageRoot.appendingPathComponent(".build/debug"))
            return candidates.map { $0.appendingPathComponent("fpcmoc-lifecycle") }
                .first { FileManager.default.isExecutableFile(atPath: $0.path) }
        }

        static func umockdevRun() -> String? {
            ["/usr/bin/umockdev-run", "/usr/local/bin/umockdev-run"].first { FileManager.default.isExecutableFile(atPath: $0) }
        }

        @Test func theRecordedLifecycleReplaysExactly() async throws {
            let umockdev = try #require(Self.umockdevRun(), "umockdev-run is missing: apt-get install umockdev")
            let program = try #require(Self.program(), "fpcmoc-lifecycle not built (swift build --build-tests)")
            let recording = Fixtures.recording("fpcmoc")
            let device = try String(contentsOf: recording.appendingPathComponent("device"), encoding: .utf8)
            let sysfsPath = try #require(device.split(separator: "\n").first { $0.hasPrefix("P: ") }?.dropFirst(3))

            var environment = ProcessInfo.processInfo.environment
            environment["FP_DEVICE_EMULATION"] = "1"
            environment["FP_DRIVERS_WHITELIST"] = "fpcmoc"
            for name in ["FP_VIRTUAL_IMAGE", "FP_VIRTUAL_DEVICE", "FP_VIRTUAL_DEVICE_STORAGE"] { environment[name] = nil }
            // Standard error is not looked at: libusb and umockdev are chatty.
            let replay = try await runProgram(umockdev, ["-d", recording.appendingPathComponent("device").path,
                                                         "-p", "/sys\(sysfsPath)=\(recording.appendingPathComponent("custom.pcapng").path)",
                                                         "--", program.path],
                                              environment: environment, inheriting: false)
            let text = replay.stdout

            let lines = text.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }
            var steps: [String: [String: Any]] = [:]
            for line in lines { if let step = line["step"] as? String { steps[step] = line } }
            #expect(replay.status == 0, "the replay deviated:\n\(text)")
            #expect(lines.compactMap { $0["step"] as? String }
                    == ["enumerate", "open", "clear", "enroll", "list", "verify", "deserialize", "identify", "delete", "close"],
                    "\(text)")
            #expect(lines.allSatisfy { $0["error"] == nil }, "\(text)")

            let enumerate = try #require(steps["enumerate"])
            #expect(enumerate["driver"] as? String == "fpcmoc")
            #expect(enumerate["readers"] as? Int == 1)
            #expect(enumerate["enroll_stages"] as? Int == 25)
            let features = enumerate["features"] as? [String] ?? []
            #expect(Set(features) == ["identify", "verify", "storage", "list", "delete", "clear", "duplicates-check"])

            // The recorded enrollment: 12 good touches (the reader finishes before its maximum of
            // 25) with 3 poor ones among them, and a print kept on the reader.
            let enroll = try #require(steps["enroll"])
            #expect(enroll["stages"] as? [Int] == Array(1...12))
            #expect(enroll["totals"] as? [Int] == [25])
            #expect(enroll["retries"] as? Int == 3)
            #expect(enroll["device_stored"] as? Bool == true)

            #expect(steps["list"]?["count"] as? Int == 1)
            #expect(steps["verify"]?["match"] as? Bool == true)
            #expect(steps["identify"]?["index"] as? Int == 0)
        }
    }
}
