import Foundation
import Subprocess
// FilePath, which swift-subprocess takes.
import SystemPackage
import Testing

// Shared helpers for the udev tests: where things are, running programs, reading
// hwdb files and umockdev device descriptions.

enum Paths {
    /// The package root: this file is <root>/Tests/UdevTests/Support.swift.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let udev = packageRoot.appendingPathComponent("udev")
    static let generator = udev.appendingPathComponent("generate-hwdb.sh")
    static let hwdb = udev.appendingPathComponent("60-touchgate-fingerprint-reader.hwdb")
    static let rules = udev.appendingPathComponent("70-touchgate-fingerprint-reader.rules")
    static let daemonRules = udev.appendingPathComponent("71-touchgated-fingerprint-reader.rules")
    static let shared = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")
    static let umockdevFixtures = shared.appendingPathComponent("fixtures/umockdev")

    /// libfprint's hwdb as installed by Debian's libfprint-2-2 (usr-merged or not).
    static func libfprintHwdb(sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        let candidates = ["/usr/lib/udev/hwdb.d", "/lib/udev/hwdb.d"].map {
            URL(fileURLWithPath: $0).appendingPathComponent("60-autosuspend-libfprint-2.hwdb")
        }
        return try #require(
            candidates.first { FileManager.default.fileExists(atPath: $0.path) },
            "libfprint's 60-autosuspend-libfprint-2.hwdb not found in \(candidates.map(\.path)): install the Debian package libfprint-2-2",
            sourceLocation: sourceLocation)
    }

    /// The recorded readers in ../shared/fixtures/umockdev, one directory per driver.
    static func recordedReaders(sourceLocation: SourceLocation = #_sourceLocation) throws -> [RecordedDevice] {
        let dir = umockdevFixtures
        var isDirectory: ObjCBool = false
        try #require(
            FileManager.default.fileExists(atPath: dir.path, isDirectory: &isDirectory) && isDirectory.boolValue,
            "umockdev fixtures missing: expected \(dir.path) (the shared/ directory next to the package root)",
            sourceLocation: sourceLocation)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        let readers = try names.compactMap { name -> RecordedDevice? in
            let device = dir.appendingPathComponent(name).appendingPathComponent("device")
            guard FileManager.default.fileExists(atPath: device.path) else { return nil }
            return try RecordedDevice(name: name, file: device, sourceLocation: sourceLocation)
        }
        try #require(!readers.isEmpty, "no */device files in \(dir.path)", sourceLocation: sourceLocation)
        return readers
    }
}

// MARK: - Tools

/// An external program a test needs, with the Debian package that provides it.
struct Tool: Sendable {
    let name: String
    let debianPackage: String

    static let bash = Tool(name: "bash", debianPackage: "bash")
    static let udevadm = Tool(name: "udevadm", debianPackage: "udev")
    static let systemdHwdb = Tool(name: "systemd-hwdb", debianPackage: "udev")
    static let umockdevRun = Tool(name: "umockdev-run", debianPackage: "umockdev")
    static let unshare = Tool(name: "unshare", debianPackage: "util-linux")
    static let mount = Tool(name: "mount", debianPackage: "mount")

    /// The absolute path, or a test failure naming the package to install.
    func path(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let fromEnvironment = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let directories = fromEnvironment + ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        let found = directories
            .map { URL(fileURLWithPath: $0).appendingPathComponent(name).path }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(
            found, "`\(name)` not found: install the Debian package \(debianPackage) (apt-get install \(debianPackage))",
            sourceLocation: sourceLocation)
    }
}

// MARK: - Processes

struct ProcessOutput: Sendable {
    let commandLine: String
    let status: Int32
    let stdout: String
    let stderr: String

    var succeeded: Bool { status == 0 }
    /// For failure messages.
    var summary: String { "`\(commandLine)` exited with \(status); stderr:\n\(stderr)" }
}

/// Runs a program to completion with this process's environment plus `environment`.
func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:]
) async throws -> ProcessOutput {
    let full = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let result = try await Subprocess.run(
        .path(FilePath(executable)), arguments: Arguments(arguments),
        // As C strings: swift-subprocess 1.0.2 passes each entry to strdup as it is.
        environment: .custom(full.map { Array("\($0.key)=\($0.value)".utf8) + [0] }),
        output: .string(limit: 1 << 24), error: .string(limit: 1 << 24))
    let status: Int32 = switch result.terminationStatus {
    case .exited(let code): code
    case .signaled(let signal): 128 + signal
    }
    return ProcessOutput(commandLine: ([executable] + arguments).joined(separator: " "), status: status,
                         stdout: result.standardOutput, stderr: result.standardError)
}

/// Runs `body` with a fresh temporary directory and removes the directory afterwards.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("touchgate-udev-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    return try await body(dir)
}

// MARK: - hwdb files

/// A USB vendor/product pair, lower-case hex like udev's ID_VENDOR_ID / ID_MODEL_ID.
struct USBID: Hashable, Comparable, Sendable, CustomStringConvertible {
    let vendor: String
    let product: String

    init(vendor: String, product: String) {
        self.vendor = vendor.lowercased()
        self.product = product.lowercased()
    }

    /// Parses a hwdb match of the form `usb:vXXXXpYYYY*`; nil for anything else.
    init?(hwdbMatch line: String) {
        let hex = "0123456789ABCDEFabcdef"
        let chars = Array(line)
        guard chars.count == 15, line.hasPrefix("usb:v"), chars[9] == "p", chars[14] == "*",
              (Array(chars[5..<9]) + Array(chars[10..<14])).allSatisfy({ hex.contains($0) })
        else { return nil }
        self.init(vendor: String(chars[5..<9]), product: String(chars[10..<14]))
    }

    var description: String { "\(vendor):\(product)" }
    static func < (a: USBID, b: USBID) -> Bool { (a.vendor, a.product) < (b.vendor, b.product) }
}

/// One hwdb record: the match lines, the property lines, and the comment lines seen
/// since the previous record (libfprint names the driver or section there).
struct HwdbRecord {
    var comments: [String] = []
    var matches: [String] = []
    var properties: [String: String] = [:]
}

/// Reads a hwdb source file (systemd's hwdb(7) format): records are match lines
/// followed by property lines that start with a space; blank lines end a record.
func parseHwdb(_ text: String) -> [HwdbRecord] {
    var records: [HwdbRecord] = []
    var current = HwdbRecord()
    var pendingComments: [String] = []
    func finish() {
        if !current.matches.isEmpty { records.append(current) }
        current = HwdbRecord()
    }
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
        if line.hasPrefix("#") {
            pendingComments.append(line)
        } else if line.trimmingCharacters(in: .whitespaces).isEmpty {
            finish()
        } else if line.hasPrefix(" ") {
            let property = line.dropFirst()
            if let eq = property.firstIndex(of: "=") {
                current.properties[String(property[..<eq])] = String(property[property.index(after: eq)...])
            }
        } else {
            if !current.properties.isEmpty { finish() }  // a new record without a blank line
            if current.matches.isEmpty {
                current.comments = pendingComments
                pendingComments = []
            }
            current.matches.append(line)
        }
    }
    finish()
    return records
}

/// libfprint's hwdb split into its supported readers and its "Known unsupported devices".
struct LibfprintHwdb {
    var supported: Set<USBID> = []
    var unsupported: Set<USBID> = []

    init(contentsOf url: URL) throws {
        // Sections are announced by comments and last until the next announcement.
        var inUnsupported = false
        for record in parseHwdb(try String(contentsOf: url, encoding: .utf8)) {
            for comment in record.comments {
                if comment.hasPrefix("# Supported by libfprint driver") { inUnsupported = false }
                if comment.hasPrefix("# Known unsupported devices") { inUnsupported = true }
            }
            for id in record.matches.compactMap(USBID.init(hwdbMatch:)) {
                if inUnsupported { unsupported.insert(id) } else { supported.insert(id) }
            }
        }
    }
}

// MARK: - umockdev device descriptions

/// A device described by a umockdev `device` file (umockdev-record's format: blocks
/// of `P:` sysfs path, `E:` uevent properties, `A:`/`H:` attributes, `L:` links,
/// `N:` device node contents; the first block is the device itself, the rest its
/// parents).
struct RecordedDevice: Sendable, CustomStringConvertible {
    let name: String
    let file: URL
    let text: String
    let sysfsPath: String
    let id: USBID

    init(name: String, file: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.name = name
        self.file = file
        text = try String(contentsOf: file, encoding: .utf8)
        let block = Self.firstBlock(text)
        func value(_ prefix: String) -> String? {
            guard let line = block.first(where: { $0.hasPrefix(prefix) }) else { return nil }
            var v = String(line.dropFirst(prefix.count))
            if v.hasSuffix("\\n") { v.removeLast(2) }  // some recordings keep sysfs's newline, escaped
            return v
        }
        sysfsPath = try #require(value("P: "), "\(file.path): no `P:` line", sourceLocation: sourceLocation)
        let vendor = try #require(value("A: idVendor="), "\(file.path): no idVendor attribute", sourceLocation: sourceLocation)
        let product = try #require(value("A: idProduct="), "\(file.path): no idProduct attribute", sourceLocation: sourceLocation)
        id = USBID(vendor: vendor, product: product)
    }

    var description: String { "\(name) (\(id))" }

    static func firstBlock(_ text: String) -> [String] {
        Array(text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .prefix { !$0.isEmpty })
    }

    /// The same device description with another vendor/product id: its attributes,
    /// uevent properties and USB device descriptor are rewritten, and what a previous
    /// udev run had added for the original id (database names, tags) is dropped.
    func withID(_ new: USBID) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let blockEnd = lines.firstIndex(where: \.isEmpty) ?? lines.endIndex
        func littleEndian(_ hex: String) -> String {
            let h = hex.uppercased()
            return String(h.suffix(2) + h.prefix(2))
        }
        func trimmedHex(_ hex: String) -> String {
            String(Int(hex, radix: 16) ?? 0, radix: 16)
        }
        let oldDescriptorIDs = littleEndian(id.vendor) + littleEndian(id.product)
        let newDescriptorIDs = littleEndian(new.vendor) + littleEndian(new.product)
        var block: [String] = []
        for line in lines[..<blockEnd] {
            let newline = line.hasSuffix("\\n") ? "\\n" : ""
            if line.hasPrefix("A: idVendor=") {
                block.append("A: idVendor=\(new.vendor)\(newline)")
            } else if line.hasPrefix("A: idProduct=") {
                block.append("A: idProduct=\(new.product)\(newline)")
            } else if line.hasPrefix("E: ID_VENDOR_ID=") || line.hasPrefix("E: ID_USB_VENDOR_ID=") {
                block.append(line.prefix { $0 != "=" } + "=\(new.vendor)")
            } else if line.hasPrefix("E: ID_MODEL_ID=") || line.hasPrefix("E: ID_USB_MODEL_ID=") {
                block.append(line.prefix { $0 != "=" } + "=\(new.product)")
            } else if line.hasPrefix("E: PRODUCT=") {
                // PRODUCT=vendor/product/bcdDevice, hex without leading zeros.
                let parts = line.dropFirst("E: PRODUCT=".count).split(separator: "/")
                let revision = parts.count == 3 ? String(parts[2]) : "0"
                block.append("E: PRODUCT=\(trimmedHex(new.vendor))/\(trimmedHex(new.product))/\(revision)")
            } else if line.hasPrefix("N: ") || line.hasPrefix("H: descriptors=") {
                // Device descriptor: idVendor and idProduct are bytes 8...11, little-endian.
                guard let eq = line.firstIndex(of: "=") else { block.append(line); continue }
                var hex = Array(line[line.index(after: eq)...])
                if hex.count >= 24, String(hex[16..<24]).uppercased() == oldDescriptorIDs {
                    hex.replaceSubrange(16..<24, with: Array(newDescriptorIDs))
                }
                block.append(String(line[...eq]) + String(hex))
            } else if line.contains("_FROM_DATABASE=") || line.hasPrefix("E: LIBFPRINT_DRIVER=")
                || line.hasPrefix("E: TAGS=") || line.hasPrefix("E: CURRENT_TAGS=") {
                continue
            } else {
                block.append(line)
            }
        }
        lines.replaceSubrange(..<blockEnd, with: block)
        return lines.joined(separator: "\n")
    }
}
