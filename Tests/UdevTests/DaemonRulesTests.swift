import Foundation
import Testing

/// 71-touchgated-fingerprint-reader.rules: with the daemon installed, readers belong to
/// its group (mode 0660) and nothing else changes hands.
@Suite("udev rules give touchgated's group the readers")
struct DaemonRulesTests {
    /// An id no Debian system gives a group, so the test sees ours and not one installed.
    static let group: UInt32 = 64_987

    /// The GROUP= and MODE= assignments udevadm test logged for the device, in order:
    /// `(rules file, value)`. The last one of each is what the device node gets.
    static func assignments(_ key: String, in log: String) -> [(file: String, value: String)] {
        log.split(separator: "\n").compactMap { line in
            // "1-4.4: /etc/udev/rules.d/71-….rules:19 GROUP 987"
            let words = line.split(separator: " ")
            guard words.count == 4, words[2] == key else { return nil }
            let file = words[1].split(separator: ":").first.map(String.init) ?? ""
            return (URL(fileURLWithPath: file).lastPathComponent, String(words[3]))
        }
    }

    @Test("recorded readers get group touchgated and mode 0660, set last, and keep the seat's uaccess tag")
    func readersBelongToTheDaemonsGroup() async throws {
        let readers = try Paths.recordedReaders()
        let results = try await UdevSandbox.run(
            readers.map { UdevSandbox.Device(label: $0.name, file: $0.file, sysfsPath: $0.sysfsPath) },
            withTouchgateFiles: true, daemonGroup: Self.group)
        let ours = Paths.daemonRules.lastPathComponent
        for reader in readers {
            let result = try #require(results[reader.name])
            #expect(result.properties["ID_TOUCHGATE_READER"] == "1", "\(reader):\n\(result)")
            let group = Self.assignments("GROUP", in: result.log)
            let mode = Self.assignments("MODE", in: result.log)
            #expect(group.last?.file == ours && group.last?.value == "\(Self.group)",
                    "\(reader): group \(group), log:\n\(result.log)")
            #expect(mode.last?.file == ours && mode.last?.value == "0660", "\(reader): mode \(mode), log:\n\(result.log)")
            #expect(!result.log.contains("Unknown group"), "\(reader):\n\(result.log)")
            // The seat's ACL (70-…) still applies next to the group: the two files do not fight.
            #expect(result.tags.contains("uaccess"), "\(reader):\n\(result)")
        }
    }

    @Test("a USB device that is not a reader keeps its default group and mode")
    func nonReaderIsLeftAlone() async throws {
        let template = try #require(try Paths.recordedReaders().first)
        let result = try await withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("device")
            try template.withID(RulesTests.keyboard).write(to: file, atomically: true, encoding: .utf8)
            let results = try await UdevSandbox.run(
                [UdevSandbox.Device(label: "keyboard", file: file, sysfsPath: template.sysfsPath)],
                withTouchgateFiles: true, daemonGroup: Self.group)
            return try #require(results["keyboard"])
        }
        #expect(result.properties["ID_MODEL_ID"] == RulesTests.keyboard.product, "\(result)")
        let ours = Paths.daemonRules.lastPathComponent
        #expect(!Self.assignments("GROUP", in: result.log).contains { $0.file == ours }, "\(result.log)")
        #expect(!Self.assignments("MODE", in: result.log).contains { $0.file == ours }, "\(result.log)")
        // udev's own default for USB devices (50-udev-default.rules) is what it gets.
        #expect(Self.assignments("MODE", in: result.log).last?.value == "0664", "\(result.log)")
    }
}
