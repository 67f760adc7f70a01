import Foundation
import Testing
import TouchgateImageIO
import TouchgateTestSupport

/// `touchgate capture` on recordings of real USB readers, replayed by umockdev.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ReplayTests {
    @Test(arguments: ["vfs5011", "aes3500", "elan"])
    func captureMatchesTheRecordedImage(driver: String) async throws {
        let umockdev = try #require(Tools.path("umockdev-run"), "umockdev-run not found: apt-get install umockdev")
        let recording = Fixtures.recording(driver)
        let ioctl = try String(contentsOf: recording.appendingPathComponent("capture.ioctl"), encoding: .utf8)
        let firstLine = try #require(ioctl.split(separator: "\n").first)
        let devnode = firstLine.replacingOccurrences(of: "@DEV ", with: "")
        let home = try TemporaryDirectory("touchgate-replay")
        defer { home.remove() }
        var process = CLIProcess(environment: [
            "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"),
            "FP_DEVICE_EMULATION": "1", "FP_DRIVERS_WHITELIST": driver,
        ])
        process.wrapper = [umockdev, "-d", recording.appendingPathComponent("device").path,
                           "-i", "\(devnode)=\(recording.appendingPathComponent("capture.ioctl").path)", "--"]
        let output = home.path("capture.pgm")
        let result = try await process.run(["capture", "--output", output, "--json"])
        #expect(result.status == 0, "\(result.stderrLines)")
        #expect(result.eventNames.filter { $0 == "finger-needed" }.count == 1)
        let captured = try GreyImage(pgm: Data(contentsOf: URL(fileURLWithPath: output)))
        let reference = try GreyImage(png: Data(contentsOf: recording.appendingPathComponent("capture.png")))
        #expect(captured.width == reference.width && captured.height == reference.height)
        #expect(captured.pixels == reference.pixels, "pixels differ from capture.png")
    }
}

/// A replayed reader that goes off its recording (libfprint's fpcmoc recording, enrolled
/// for another user and finger than it holds) fails with a message that holds still and
/// says what to do. With libfprint's debug output on, the failed enrollment's cleanup fails
/// too and libfprint 1.94.5 hands over an error it already freed; its garbage once showed
/// as " (unknown error 32676)", a different number each run.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct DivergedReplayTests {
    @Test func enrollOffTheRecordingFailsWithAStableMessage() async throws {
        let umockdev = try #require(Tools.path("umockdev-run"), "umockdev-run not found: apt-get install umockdev")
        let recording = Fixtures.recording("fpcmoc")
        let device = try String(contentsOf: recording.appendingPathComponent("device"), encoding: .utf8)
        let sysfs = try #require(device.split(separator: "\n").first { $0.hasPrefix("P: ") }?.dropFirst(3))
        var messages: Set<String> = []
        for _ in 0..<3 {
            let home = try TemporaryDirectory("touchgate-diverged")
            defer { home.remove() }
            var process = CLIProcess(environment: [
                "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"), "G_MESSAGES_DEBUG": "all",
                "FP_DEVICE_EMULATION": "1", "FP_DRIVERS_WHITELIST": "fpcmoc",
            ])
            process.wrapper = [umockdev, "-d", recording.appendingPathComponent("device").path,
                               "-p", "/sys\(sysfs)=\(recording.appendingPathComponent("custom.pcapng").path)", "--"]
            let result = try await process.run(["enroll", "--user", "alice", "--finger", "left-index"], timeout: 60)
            #expect(result.status == 5, "a reader error, not a crash: \(result.status)")
            let message = try #require(result.stderrLines.last { $0.hasPrefix("touchgate: ") }, "\(result.stderrLines.suffix(5))")
            #expect(!message.contains("unknown error"), "\(message)")
            #expect(message.contains("replug") || message.contains("plug it back in"), "says what to do: \(message)")
            messages.insert(message)
        }
        // Either the driver's own report (the USB transfer timed out) or, when it lost it, the general one.
        #expect(messages.count <= 2, "\(messages)")
    }
}

/// Finds external tools.
enum Tools {
    static func path(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/bin:/usr/sbin"
        return paths.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// The no-reader message names a plugged-in reader that libfprint did not offer.
@Suite(.timeLimit(.minutes(1)))
struct UnusableReaderTests {
    @Test func aRecordedReaderThatLibfprintSkipsIsNamed() async throws {
        let umockdev = try #require(Tools.path("umockdev-run"), "umockdev-run not found: apt-get install umockdev")
        let home = try TemporaryDirectory("touchgate-unusable")
        defer { home.remove() }
        // The vfs5011 recording is plugged in, but only the (unconfigured) virtual driver may run.
        var process = CLIProcess(environment: ["HOME": home.url.path, "XDG_DATA_HOME": home.path("data"),
                                               "FP_DRIVERS_WHITELIST": "virtual_image"])
        process.wrapper = [umockdev, "-d", Fixtures.recording("vfs5011").appendingPathComponent("device").path, "--"]
        let result = try await process.run(["devices"])
        #expect(result.status == 0, "an empty list")
        let message = result.stderrLines.joined(separator: " ")
        #expect(message.contains("no fingerprint reader found"))
        #expect(message.contains("138a:0017"), "names the plugged-in reader: \(message)")
    }
}
