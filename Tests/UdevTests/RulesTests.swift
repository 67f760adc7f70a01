import Foundation
import Testing

/// Runs `udevadm test` on umockdev-described devices with the system's udev rules
/// and hwdb plus (optionally) Touchgate's files, without touching the real system:
/// inside a private mount namespace, /etc/udev is replaced by a temporary directory
/// holding only the files under test, and /run and /dev by private copies, so the
/// database and /dev/char links that `udevadm test` writes stay in the namespace.
/// Without root the namespace is a user namespace mapping the caller to root. With
/// the daemon's rule, /etc/group is replaced too, by the system's plus a touchgated group.
enum UdevSandbox {
    struct Device {
        let label: String
        let file: URL
        let sysfsPath: String
    }

    /// What `udevadm test` printed for one device.
    struct Result: CustomStringConvertible {
        var properties: [String: String] = [:]
        var runs: [String] = []
        var log = ""

        var tags: Set<String> { Set((properties["TAGS"] ?? "").split(separator: ":").map(String.init)) }
        var currentTags: Set<String> { Set((properties["CURRENT_TAGS"] ?? "").split(separator: ":").map(String.init)) }
        var description: String {
            (properties.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + runs.map { "run: \($0)" })
                .joined(separator: "\n")
        }
    }

    static let script = #"""
        set -euo pipefail
        work=$1; shift
        mount --make-rprivate /
        mount -t tmpfs -o mode=0755 tmpfs /run
        mkdir -p "$work/dev"
        for node in null zero full random urandom; do
            : >"$work/dev/$node"
            mount --bind "/dev/$node" "$work/dev/$node"
        done
        mount --bind "$work/dev" /dev
        mount --bind "$work/etc-udev" /etc/udev
        if [[ -f "$work/group" ]]; then mount --bind "$work/group" /etc/group; fi
        # hwdb.bin is looked up here first: hide any, so that ours is used.
        if [[ -d /etc/systemd/hwdb ]]; then mount -t tmpfs tmpfs /etc/systemd/hwdb; fi
        unset XDG_RUNTIME_DIR
        # Compiles /etc/udev/hwdb.d (ours) with /usr/lib/udev/hwdb.d (the system's)
        # into /etc/udev/hwdb.bin, as the install instructions do.
        "$SYSTEMD_HWDB" update
        while (($# >= 3)); do
            echo "@@begin $1"; echo "@@begin $1" >&2
            "$UMOCKDEV_RUN" -d "$2" -- "$UDEVADM" test --action=add "$3"
            echo "@@end $1"; echo "@@end $1" >&2
            shift 3
        done
        """#

    /// Runs `udevadm test` for each device; results are keyed by label. `daemonGroup`
    /// adds the daemon's rule (71-touchgated-…) and a group `touchgated` with that id.
    static func run(
        _ devices: [Device], withTouchgateFiles: Bool, daemonGroup: UInt32? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String: Result] {
        let bash = try Tool.bash.path(sourceLocation: sourceLocation)
        let unshare = try Tool.unshare.path(sourceLocation: sourceLocation)
        _ = try Tool.mount.path(sourceLocation: sourceLocation)
        let environment = [
            "UDEVADM": try Tool.udevadm.path(sourceLocation: sourceLocation),
            "SYSTEMD_HWDB": try Tool.systemdHwdb.path(sourceLocation: sourceLocation),
            "UMOCKDEV_RUN": try Tool.umockdevRun.path(sourceLocation: sourceLocation),
            "LC_ALL": "C",
        ]
        let namespace = try await namespaceArguments(unshare: unshare, sourceLocation: sourceLocation)

        return try await withTemporaryDirectory { work in
            let etc = work.appendingPathComponent("etc-udev")
            let rulesDir = etc.appendingPathComponent("rules.d")
            let hwdbDir = etc.appendingPathComponent("hwdb.d")
            for dir in [rulesDir, hwdbDir] {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            }
            if withTouchgateFiles {
                try FileManager.default.copyItem(at: Paths.rules, to: rulesDir.appendingPathComponent(Paths.rules.lastPathComponent))
                try FileManager.default.copyItem(at: Paths.hwdb, to: hwdbDir.appendingPathComponent(Paths.hwdb.lastPathComponent))
            }
            if let daemonGroup {
                try FileManager.default.copyItem(
                    at: Paths.daemonRules, to: rulesDir.appendingPathComponent(Paths.daemonRules.lastPathComponent))
                let system = try String(contentsOfFile: "/etc/group", encoding: .utf8)
                    .split(separator: "\n").filter { !$0.hasPrefix("touchgated:") }
                try (system.joined(separator: "\n") + "\ntouchgated:x:\(daemonGroup):\n")
                    .write(to: work.appendingPathComponent("group"), atomically: true, encoding: .utf8)
            }
            let deviceArguments = devices.flatMap { [$0.label, $0.file.path, $0.sysfsPath] }
            let output = try await runProcess(
                unshare, namespace + ["--", bash, "-c", script, "udev-sandbox", work.path] + deviceArguments,
                environment: environment)
            try #require(output.succeeded, "udevadm test in the sandbox failed: \(output.summary)", sourceLocation: sourceLocation)

            var results: [String: Result] = [:]
            for device in devices {
                var result = Result()
                for line in section(device.label, of: output.stdout) {
                    if line.hasPrefix("run: ") {
                        result.runs.append(String(line.dropFirst(5)).trimmingCharacters(in: CharacterSet(charactersIn: "'")))
                    } else if let eq = line.firstIndex(of: "="), line[..<eq].allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "_" }) {
                        result.properties[String(line[..<eq])] = String(line[line.index(after: eq)...])
                    }
                }
                result.log = section(device.label, of: output.stderr).joined(separator: "\n")
                try #require(
                    result.properties["DEVPATH"] == device.sysfsPath,
                    "udevadm test printed no properties for \(device.label):\n\(output.stdout)\n\(output.stderr)",
                    sourceLocation: sourceLocation)
                results[device.label] = result
            }
            return results
        }
    }

    private static func section(_ label: String, of text: String) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let begin = lines.firstIndex(of: "@@begin \(label)") else { return [] }
        let rest = lines[(begin + 1)...]
        return Array(rest.prefix { $0 != "@@end \(label)" })
    }

    /// A user namespace with a mount namespace works for root and, where the kernel
    /// allows unprivileged user namespaces, for everyone. Root in a place that forbids
    /// user namespaces (some containers) can still make a plain mount namespace.
    private static func namespaceArguments(unshare: String, sourceLocation: SourceLocation) async throws -> [String] {
        let userNamespace = ["--user", "--map-root-user", "--mount"]
        let probe = try await runProcess(unshare, userNamespace + ["true"])
        if probe.succeeded { return userNamespace }
        var reason = "user namespace: \(probe.stderr)"
        if geteuid() == 0 {
            let rootProbe = try await runProcess(unshare, ["--mount", "true"])
            if rootProbe.succeeded { return ["--mount"] }
            reason += "; mount namespace as root: \(rootProbe.stderr)"
        }
        Issue.record(
            """
            cannot make a private mount namespace for udevadm test (\(reason)). Enable unprivileged \
            user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run the tests as root \
            with CAP_SYS_ADMIN.
            """, sourceLocation: sourceLocation)
        throw SandboxUnavailable()
    }

    struct SandboxUnavailable: Error {}
}

@Suite("udev rules give the seat's user access to readers")
struct RulesTests {
    /// A USB device that is not a fingerprint reader: a recorded reader's description
    /// with the vendor/product id of a Logitech keyboard (K120).
    static let keyboard = USBID(vendor: "046d", product: "c31c")

    @Test("recorded readers get ID_TOUCHGATE_READER=1 and the uaccess tag")
    func readersAreTaggedForUaccess() async throws {
        let readers = try Paths.recordedReaders()
        let results = try await UdevSandbox.run(
            readers.map { UdevSandbox.Device(label: $0.name, file: $0.file, sysfsPath: $0.sysfsPath) },
            withTouchgateFiles: true)
        for reader in readers {
            let result = try #require(results[reader.name])
            #expect(result.properties["DEVTYPE"] == "usb_device", "\(reader):\n\(result)")
            #expect(result.properties["ID_TOUCHGATE_READER"] == "1", "\(reader): hwdb property missing:\n\(result)")
            #expect(result.tags.contains("uaccess"), "\(reader): not tagged uaccess:\n\(result)")
            #expect(result.currentTags.contains("uaccess"), "\(reader): uaccess not a current tag:\n\(result)")
            // 73-seat-late.rules (systemd) turns the tag into an ACL: proves our rule runs early enough.
            #expect(result.runs.contains("uaccess"), "\(reader): 73-seat-late.rules did not run the uaccess builtin (is systemd installed?):\n\(result)")
        }
    }

    @Test("a USB device that is not a reader is left alone")
    func nonReaderIsNotTagged() async throws {
        let libfprint = try LibfprintHwdb(contentsOf: try Paths.libfprintHwdb())
        try #require(
            !libfprint.supported.contains(Self.keyboard) && !libfprint.unsupported.contains(Self.keyboard),
            "\(Self.keyboard) is in libfprint's hwdb now: pick another id for the non-reader")
        let template = try #require(try Paths.recordedReaders().first)

        let result = try await withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("device")
            try template.withID(Self.keyboard).write(to: file, atomically: true, encoding: .utf8)
            let label = "keyboard"
            let results = try await UdevSandbox.run(
                [UdevSandbox.Device(label: label, file: file, sysfsPath: template.sysfsPath)], withTouchgateFiles: true)
            return try #require(results[label])
        }

        // The device was seen as the edited USB device and went through the hwdb...
        #expect(result.properties["DEVTYPE"] == "usb_device", "\(result)")
        #expect(result.properties["ID_VENDOR_ID"] == Self.keyboard.vendor, "\(result)")
        #expect(result.properties["ID_MODEL_ID"] == Self.keyboard.product, "\(result)")
        #expect(result.properties["ID_VENDOR_FROM_DATABASE"] != nil, "the system hwdb was not consulted:\n\(result)")
        // ...and got nothing from Touchgate.
        #expect(result.properties["ID_TOUCHGATE_READER"] == nil, "\(result)")
        #expect(!result.tags.contains("uaccess"), "\(result)")
        #expect(!result.runs.contains("uaccess"), "\(result)")
    }

    @Test("without Touchgate's files the same readers are not tagged (the test is not vacuous)")
    func readersAreNotTaggedWithoutTouchgateFiles() async throws {
        let readers = try Paths.recordedReaders()
        let results = try await UdevSandbox.run(
            readers.map { UdevSandbox.Device(label: $0.name, file: $0.file, sysfsPath: $0.sysfsPath) },
            withTouchgateFiles: false)
        for reader in readers {
            let result = try #require(results[reader.name])
            #expect(result.properties["ID_TOUCHGATE_READER"] == nil, "\(reader):\n\(result)")
            #expect(!result.tags.contains("uaccess"), "\(reader): tagged uaccess without Touchgate's rules:\n\(result)")
        }
    }
}
