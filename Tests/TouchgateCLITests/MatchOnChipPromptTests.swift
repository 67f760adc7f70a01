import Foundation
import Testing
import TouchgateTestSupport

/// `touchgate enroll` on libfprint 1.94.5's own recordings of two more match-on-chip
/// readers (Tests/Fixtures/umockdev), replayed by umockdev: one `finger-needed` prompt for
/// every scan the recording holds, each before the scan's result. The two drivers report
/// finger status unlike fpcmoc (see ``PromptTests``): goodixmoc keeps "needed" (and often
/// "present") set across a retry, so no report follows it; elanmoc reports no finger status
/// at all, and its replayed scans come milliseconds apart.
///
/// libfprint's tests run, on one open reader, enroll, list, verify, identify and delete
/// (goodixmoc clears the reader's storage first). `touchgate enroll` opens the reader,
/// enrolls and closes it, so each replay is cut to that (see each test); the user id the
/// driver sends is made the one `touchgate enroll --user nobody --finger right-index` sends.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MatchOnChipPromptTests {
    /// The recorded user id (libfprint replaying: no date, no random part, no finger, user
    /// "nobody") and the one a right index finger gives.
    static let recordedID = Array("FP1-00000000-0-00000000-nobody".utf8)
    static let rightIndexID = Array("FP1-00000000-7-00000000-nobody".utf8)

    @Test func enrollOnTheGoodixmocReplayPromptsEveryRecordedScan() async throws {
        let recording = Fixtures.projectRecording("goodixmoc")
        var capture = try UsbCapture(contentsOf: recording.appendingPathComponent("custom.pcapng"))
        // Each scan is one capture command (MOC_CMD0_CAPTURE_DATA, 0xa2) sent before the
        // enrollment is committed (0xa4); each accepted scan one template update (0xa0).
        // The recording holds 20 captures and 12 updates: 8 scans were poor.
        let commands = capture.packets.filter(\.isBulkOut).map { $0.data[0] }
        let enrollment = commands.prefix { $0 != 0xa4 }
        let scans = enrollment.filter { $0 == 0xa2 }.count
        let stages = enrollment.filter { $0 == 0xa0 }.count
        try Goodix.removeStorageClearing(from: &capture)
        let result = try await Self.enroll(capture, recording: recording, driver: "goodixmoc")
        try Self.expectOnePromptPerScan(result, scans: scans, stages: stages)
    }

    @Test func enrollOnTheElanmocReplayPromptsEveryRecordedScan() async throws {
        let recording = Fixtures.projectRecording("elanmoc")
        var capture = try UsbCapture(contentsOf: recording.appendingPathComponent("custom.pcapng"))
        // Each scan is one enroll command (`40 ff 01`, elanmoc_enroll_cmd), whose last-but-one
        // byte is the stage it fills: a stage asked for again follows a poor scan. The
        // recording holds 11 of them for 9 stages.
        let enrollCommands = capture.packets.filter { $0.isBulkOut && $0.data.starts(with: [0x40, 0xff, 0x01]) }
        let scans = enrollCommands.count
        let stages = Set(enrollCommands.map { $0.data[5] }).count
        // After the enrollment the recording lists, verifies, identifies and deletes; what
        // `touchgate enroll` sends next is the closing command (`40 ff 02`, elanmoc_above_cmd).
        let packets = capture.packets
        let commit = packets.indices.first { packets[$0].isBulkOut && packets[$0].data.starts(with: [0x40, 0xff, 0x11]) }
        let closing = packets.indices.last { packets[$0].isBulkOut && packets[$0].data == [0x40, 0xff, 0x02] }
        guard let commit, let closing,
              let afterCommit = packets.indices.first(where: { $0 > commit && packets[$0].isBulkOut }), afterCommit < closing else {
            throw UsbCaptureError("the elanmoc recording changed: no enrollment commit before a closing command")
        }
        capture.removePackets(afterCommit..<closing)
        let patched = capture.editPackets { _, packet in
            packet.data.replaceAll(Self.recordedID, with: Self.rightIndexID) > 0
        }
        guard patched > 0 else { throw UsbCaptureError("no user id in the elanmoc recording") }
        let result = try await Self.enroll(capture, recording: recording, driver: "elanmoc")
        try Self.expectOnePromptPerScan(result, scans: scans, stages: stages)
    }

    /// Runs `touchgate enroll --json` in a new HOME with `capture` replayed as the reader of
    /// `recording`'s `device`.
    static func enroll(_ capture: UsbCapture, recording: URL, driver: String) async throws -> CLIResult {
        let umockdev = try #require(Tools.path("umockdev-run"), "umockdev-run not found: apt-get install umockdev")
        let home = try TemporaryDirectory("touchgate-\(driver)")
        defer { home.remove() }
        let replay = home.path("enroll.pcapng")
        try capture.data.write(to: URL(fileURLWithPath: replay))
        let device = try String(contentsOf: recording.appendingPathComponent("device"), encoding: .utf8)
        let sysfs = try #require(device.split(separator: "\n").first { $0.hasPrefix("P: ") }?.dropFirst(3))
        var process = CLIProcess(environment: [
            "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"),
            "FP_DEVICE_EMULATION": "1", "FP_DRIVERS_WHITELIST": driver,
        ])
        process.wrapper = [umockdev, "-d", recording.appendingPathComponent("device").path,
                           "-p", "/sys\(sysfs)=\(replay)", "--"]
        return try await process.run(["enroll", "--json", "--user", "nobody", "--finger", "right-index"], timeout: 60)
    }

    /// One prompt per scan, each followed by its result (a stage done or a retry hint)
    /// before the next prompt; `stages` stages done.
    static func expectOnePromptPerScan(_ result: CLIResult, scans: Int, stages: Int) throws {
        #expect(result.status == 0, "\(result.stderrLines.suffix(5))")
        let transcript = PromptTests.transcript(result)
        #expect(result.eventNames.filter { $0 == "finger-needed" }.count == scans, "\(transcript)")
        #expect(transcript.filter { $0.hasPrefix("done") }.count == stages, "\(transcript)")
        #expect(transcript.filter { $0 == "retry" }.count == scans - stages, "\(transcript)")
        var asked = false
        for line in transcript {
            if line.hasPrefix("ask") {
                #expect(!asked, "a second prompt for one scan: \(transcript)")
            } else {
                #expect(asked, "a scan's result without its prompt: \(transcript)")
            }
            asked = line.hasPrefix("ask")
        }
        #expect(result.json?["on-device"] as? Bool == true)
    }
}

/// goodixmoc's framing (libfprint's `drivers/goodixmoc/goodix_proto.c`): every command
/// starts with cmd0, cmd1, a package number, a sequence number counted by the driver over
/// the whole process, a little-endian length (what follows the 8-byte header, checksum
/// included), a CRC-8 of the first six bytes and its complement; a CRC-32 of everything
/// before it ends the packet. umockdev replays a command only if it is sent byte for byte.
enum Goodix {
    /// Leaves out the recording's storage clearing (MOC_CMD0_DELETETEMPLATE with
    /// MOC_CMD1_DELETE_ALL: `a7 01`, up to the next command), which libfprint's test runs
    /// after opening the reader and `touchgate enroll` does not; the commands after it are
    /// numbered one lower, as the driver then numbers them; and gives them the user id of a
    /// right index finger (in every packet that carries it, device answers included).
    static func removeStorageClearing(from capture: inout UsbCapture) throws {
        let packets = capture.packets
        let clearing = packets.indices.filter { packets[$0].isBulkOut && packets[$0].data.starts(with: [0xa7, 0x01]) }
        guard clearing.count == 1, let start = clearing.first,
              let end = packets.indices.first(where: { $0 > start && packets[$0].isBulkOut }) else {
            throw UsbCaptureError("the goodixmoc recording changed: storage clearing at \(clearing)")
        }
        capture.removePackets(start..<end)
        var failure: UsbCaptureError?
        var renumbered = 0
        var patched = 0
        capture.editPackets { index, packet in
            guard packet.isBulkOut || packet.isBulkIn, packet.data.count >= 12 else { return false }
            var changed = false
            if index >= start && packet.isBulkOut {
                packet.data[3] &-= 1
                renumbered += 1
                changed = true
            }
            if packet.data.replaceAll(MatchOnChipPromptTests.recordedID, with: MatchOnChipPromptTests.rightIndexID) > 0 {
                patched += 1
                changed = true
            }
            guard changed else { return false }
            do { try seal(&packet.data) } catch { failure = error as? UsbCaptureError }
            return true
        }
        if let failure { throw failure }
        guard renumbered > 0, patched > 0 else {
            throw UsbCaptureError("the goodixmoc recording changed: \(renumbered) commands after the clearing, \(patched) user ids")
        }
    }

    /// Recomputes the header's CRC-8 and the packet's CRC-32.
    static func seal(_ data: inout [UInt8]) throws {
        let length = Int(data[4]) | Int(data[5]) << 8
        guard length >= 4, 8 + length <= data.count else { throw UsbCaptureError("not a goodixmoc packet: \(data.prefix(8))") }
        let crc8 = headerCRC(data[0..<6])
        data[6] = crc8
        data[7] = ~crc8
        let end = 8 + length - 4
        let crc32 = crc32(data[0..<end])
        for byte in 0..<4 { data[end + byte] = UInt8(truncatingIfNeeded: crc32 >> (8 * byte)) }
    }

    /// `gx_proto_crc8_calc`.
    static func headerCRC(_ bytes: ArraySlice<UInt8>) -> UInt8 {
        var crc: UInt32 = 0
        for byte in bytes {
            crc ^= UInt32(byte) << 8
            for _ in 0..<8 {
                if crc & 0x8000 != 0 { crc ^= 0x1070 << 3 }
                crc &<<= 1
            }
        }
        return UInt8(truncatingIfNeeded: ~(crc >> 8))
    }

    /// The CRC-32 of zlib and Ethernet, which `gx_proto_crc32_calc` computes.
    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
