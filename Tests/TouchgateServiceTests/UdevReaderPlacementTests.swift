import Foundation
import Logging
import Testing
@testable import TouchgateService
import TouchgateAPI

/// Where udev and the kernel put the readers, read from trees laid out as sysfs's
/// `/sys/bus/usb/devices` and udev's `/run/udev/data` are.
@Suite struct UdevReaderPlacementTests {
    /// A sysfs and udev database with `devices`: (name, major:minor, removable or nil, tagged).
    static func tree(_ devices: [(name: String, number: String, removable: String?, tagged: Bool)]) throws -> (URL, UdevReaderPlacement) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-udev-\(UUID().uuidString)")
        let sysfs = root.appendingPathComponent("devices"), database = root.appendingPathComponent("data")
        for directory in [sysfs, database] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        for device in devices {
            let folder = sysfs.appendingPathComponent(device.name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try (device.number + "\n").write(to: folder.appendingPathComponent("dev"), atomically: true, encoding: .utf8)
            if let removable = device.removable {
                try (removable + "\n").write(to: folder.appendingPathComponent("removable"), atomically: true, encoding: .utf8)
            }
            let record = "I:123\nE:ID_VENDOR_ID=06cb\n" + (device.tagged ? "E:ID_TOUCHGATE_READER=1\n" : "") + "G:uaccess\n"
            try record.write(to: database.appendingPathComponent("c" + device.number), atomically: true, encoding: .utf8)
        }
        // An interface beside the device, as sysfs lists them: never a reader.
        try FileManager.default.createDirectory(at: sysfs.appendingPathComponent("1-3:1.0"), withIntermediateDirectories: true)
        return (root, UdevReaderPlacement(devices: sysfs.path, database: database.path))
    }

    @Test("a tagged reader on a fixed port is built in; on a removable one, external; the firmware silent or no reader, unknown")
    func placements() throws {
        let cases: [([(String, String, String?, Bool)], ReaderPresence.Placement?)] = [
            ([("1-3", "189:2", "fixed", true), ("1-1", "189:1", "removable", false)], .builtIn),
            ([("2-1", "189:130", "removable", true)], .external),
            ([("1-3", "189:2", "fixed", true), ("2-1", "189:130", "removable", true)], .external),
            ([("1-3", "189:2", "unknown", true)], nil),
            ([("1-3", "189:2", nil, true)], nil),
            ([("1-3", "189:2", "fixed", true), ("1-4", "189:3", "unknown", true)], nil),
            ([("1-1", "189:1", "fixed", false)], nil),
            ([], nil),
        ]
        for (devices, expected) in cases {
            let (root, udev) = try Self.tree(devices.map { (name: $0.0, number: $0.1, removable: $0.2, tagged: $0.3) })
            defer { try? FileManager.default.removeItem(at: root) }
            #expect(udev.placement() == expected, "\(devices)")
        }
        #expect(UdevReaderPlacement(devices: "/nonexistent", database: "/nonexistent").placement() == nil)
    }

    @Test("auto follows udev: a closed lid refuses a fixed reader even docked, never a removable one; unknown falls back to docking")
    func autoFollowsUdev() async {
        func check(_ found: ReaderPresence.Placement?, docked: Bool) async -> ServiceError? {
            let rule = ReaderPresence(placement: .auto, logger: Logger(label: "test"), hardware: { found }) {
                (closed: true, docked: docked)
            }
            do {
                try await rule.check()
                return nil
            } catch {
                return error
            }
        }
        #expect(await check(.builtIn, docked: true)?.code == .noReader)
        #expect(await check(.builtIn, docked: false)?.code == .noReader)
        #expect(await check(.external, docked: false) == nil)
        #expect(await check(nil, docked: true) == nil)
        #expect(await check(nil, docked: false)?.code == .noReader)
    }
}
