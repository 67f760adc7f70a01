import FoundationEssentials
import TouchgateAPI
import Glibc

/// Explains why no reader is usable: nothing plugged in, or a supported USB reader the
/// user cannot open (udev rules missing), or a filter in the environment.
enum ReaderDiagnostics {
    static let openHint = "If fprintd holds the reader, let Touchgate verify through it (unset "
        + "TOUCHGATE_READER_BACKEND, or set it to fprintd), or wait until the login or lock screen using it is done; "
        + "if you lack permission to the USB device, install the udev rules (see udev/README.md)."

    static func noReaderMessage(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        var message = "no fingerprint reader found"
        if let filter = environment["FP_DRIVERS_WHITELIST"] {
            message += " (FP_DRIVERS_WHITELIST=\(filter) limits the drivers tried)"
        }
        let plugged = pluggedKnownReaders()
        let locked = plugged.filter { !$0.writable }
        if !locked.isEmpty {
            let list = locked.map { "\($0.id) at \($0.node)" }.joined(separator: ", ")
            message += ". A fingerprint reader is plugged in but you have no permission to open it: \(list). "
                + "Install Touchgate's udev rules (see udev/README.md), then unplug and replug the reader."
        } else if !plugged.isEmpty {
            let list = plugged.map { "\($0.id) at \($0.node)" }.joined(separator: ", ")
            message += ". A USB device listed in libfprint's hardware database is plugged in (\(list)), "
                + "but libfprint did not offer it: this libfprint may list it as unsupported, "
                + "or FP_DRIVERS_WHITELIST excludes its driver."
        } else {
            message += ". Plug in a supported USB reader; without one, try the virtual reader "
                + "(see README, \"Quick start\")."
        }
        return message
    }

    /// USB devices whose vendor:product appear in libfprint's hwdb.
    static func pluggedKnownReaders() -> [(id: String, node: String, writable: Bool)] {
        let known = libfprintIDs()
        guard !known.isEmpty,
              let entries = try? FileManager.default.contentsOfDirectory(atPath: "/sys/bus/usb/devices") else { return [] }
        var found: [(String, String, Bool)] = []
        for entry in entries.sorted() {
            let base = "/sys/bus/usb/devices/\(entry)/"
            guard let vendor = read(base + "idVendor"), let product = read(base + "idProduct"),
                  known.contains("\(vendor):\(product)".lowercased()),
                  let bus = read(base + "busnum").flatMap(Int.init), let dev = read(base + "devnum").flatMap(Int.init)
            else { continue }
            let node = "/dev/bus/usb/\(bus.zeroPadded(3))/\(dev.zeroPadded(3))"
            found.append(("\(vendor):\(product)", node, access(node, W_OK) == 0))
        }
        return found
    }

    private static func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingWhitespace()
    }

    /// `vvvv:pppp` ids from libfprint's installed hwdb (`usb:vXXXXpYYYY*` lines).
    private static func libfprintIDs() -> Set<String> {
        let candidates = ["/usr/lib/udev/hwdb.d/60-autosuspend-libfprint-2.hwdb",
                          "/lib/udev/hwdb.d/60-autosuspend-libfprint-2.hwdb"]
        guard let text = candidates.lazy.compactMap({ try? String(contentsOfFile: $0, encoding: .utf8) }).first
        else { return [] }
        var ids = Set<String>()
        for line in text.split(separator: "\n") where line.hasPrefix("usb:v") && line.count >= 14 {
            let chars = Array(line)
            ids.insert((String(chars[5..<9]) + ":" + String(chars[10..<14])).lowercased())
        }
        return ids
    }
}
