import FoundationEssentials
import TouchgateAPI

/// Where the machine's fingerprint readers are, as udev and the kernel say: a USB reader
/// tagged `ID_TOUCHGATE_READER=1` (Touchgate's hwdb, installed with its udev rules) sits
/// on a port the firmware describes as fixed (built into the machine) or removable (a
/// socket for a plug). The kernel publishes that as the device's `removable` attribute.
///
/// libfprint does not say which USB device a reader is, so every tagged reader counts: all
/// of them fixed is a built-in reader, any of them removable is one a finger may reach
/// with the lid closed. Read from sysfs and udev's database directly (two small files per
/// device) rather than through libudev: this is all that is needed, and it runs before
/// each touch in the daemon.
struct UdevReaderPlacement: Sendable {
    /// sysfs's USB devices (`/sys/bus/usb/devices`) and udev's database (`/run/udev/data`);
    /// a test's trees otherwise.
    let devices: String
    let database: String

    init(devices: String = "/sys/bus/usb/devices", database: String = "/run/udev/data") {
        self.devices = devices
        self.database = database
    }

    /// `.builtIn` when every tagged reader is on a fixed port, `.external` when any is on a
    /// removable one, nil when there is none or the firmware does not say.
    func placement() -> ReaderPresence.Placement? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: devices)) ?? []
        var kinds: [String] = []
        for entry in entries.sorted() where !entry.contains(":") {  // "1-2:1.0" are interfaces
            let device = devices + "/" + entry
            guard let number = Self.read(device + "/dev"), isReader(number) else { continue }
            kinds.append(Self.read(device + "/removable") ?? "unknown")
        }
        if kinds.contains("removable") { return .external }
        if !kinds.isEmpty, kinds.allSatisfy({ $0 == "fixed" }) { return .builtIn }
        return nil
    }

    /// Whether udev's record of character device `number` ("189:3") tags it a reader.
    private func isReader(_ number: String) -> Bool {
        guard let record = Self.read(database + "/c" + number) else { return false }
        return record.split(separator: "\n").contains("E:ID_TOUCHGATE_READER=1")
    }

    /// A small file's text, without its trailing newline; nil when it cannot be read.
    private static func read(_ path: String) -> String? {
        guard let data = FileInput.read(path, upTo: 64 * 1024), !data.isEmpty else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingWhitespace()
    }
}
