import ArgumentParser
import FoundationEssentials
import Subprocess
import SystemPackage
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate passkey enable` and `disable`: the machine's side of touchgated's passkey
/// devices. Three files, each marked as Touchgate's so that disable removes only its own:
/// the uhid module loaded at boot, /dev/uhid given to touchgated's group (only the daemon
/// may make a HID device: uhid can make a keyboard too), and a drop-in of touchgated's unit
/// that lets it open /dev/uhid and turns its devices on.
enum PasskeySetup {
    static let mark = "# Written by touchgate passkey enable; touchgate passkey disable removes it."
    static let modules = "/etc/modules-load.d/touchgate-passkey.conf"
    static let uhidRule = "/etc/udev/rules.d/69-touchgate-uhid.rules"
    static let dropIn = "/etc/systemd/system/touchgated.service.d/touchgate-passkey.conf"
    /// Where the packages and `make install-udev` put the rule that gives each device's hidraw
    /// node to its owner alone; without it the seat's ACL rules would give it to whoever is at the seat.
    static let nodeRuleDirectories = ["/usr/lib/udev/rules.d", "/lib/udev/rules.d", "/etc/udev/rules.d",
                                      "/usr/local/lib/udev/rules.d"]
    static let nodeRule = "69-touchgate-passkey.rules"
    /// The user unit that shows each user what her device waits for (`touchgate passkey prompts`).
    static let promptsUnit = "touchgate-passkey-prompts.service"

    /// The files enable writes, in order.
    static let paths = [modules, uhidRule, dropIn]

    static func files(group: String) -> [(path: String, text: String)] {
        [
            (modules, "\(mark)\n# The passkey authenticator is a virtual HID device made through uhid.\nuhid\n"),
            (uhidRule, "\(mark)\n# Only touchgated (its group) may make HID devices: each user's passkey device.\n"
                + "KERNEL==\"uhid\", SUBSYSTEM==\"misc\", GROUP=\"\(group)\", MODE=\"0660\"\n"),
            (dropIn, "\(mark)\n[Service]\n# Each user's passkey device at the seat (touchgated --passkeys).\n"
                + "Environment=TOUCHGATED_PASSKEYS=seat\nDeviceAllow=/dev/uhid rw\n"),
        ]
    }

    /// Runs `program` with `arguments`, its output discarded: whether it succeeded.
    static func run(_ program: String, _ arguments: [String]) async -> Bool {
        guard access(program, X_OK) == 0 else { return false }
        let result = try? await Subprocess.run(.path(FilePath(program)), arguments: Arguments(arguments),
                                               output: .discarded, error: .discarded)
        return result?.terminationStatus.isSuccess ?? false
    }

    static var systemdRuns: Bool { access("/run/systemd/system", F_OK) == 0 }

    static func requireRoot(_ what: String) throws(ServiceError) {
        guard geteuid() == 0 else {
            throw ServiceError(.forbidden, "touchgate passkey \(what) sets up this machine for touchgated: run it as root "
                               + "(sudo touchgate passkey \(what)). Without touchgated, your agent makes your device "
                               + "(touchgate agent --passkeys, given /dev/uhid: README, Passkeys)")
        }
    }

    /// Reloads what reads the files: udev (and /dev/uhid's group now), systemd and touchgated.
    static func apply(group: String?) async -> [String] {
        var notes: [String] = []
        if await run("/usr/bin/udevadm", ["control", "--reload-rules"]) {
            _ = await run("/usr/bin/udevadm", ["trigger", "--action=change", "/sys/devices/virtual/misc/uhid"])
        } else {
            notes.append("udev is not running: the rule applies from the next boot")
        }
        // What the rule says, at once: udev may not be running, or may not have finished.
        if let group, access("/dev/uhid", F_OK) == 0, let entry = getgrnam(group) {
            chown("/dev/uhid", 0, entry.pointee.gr_gid)
            chmod("/dev/uhid", 0o660)
        } else if group == nil, access("/dev/uhid", F_OK) == 0 {
            chown("/dev/uhid", 0, 0)
            chmod("/dev/uhid", 0o600)
        }
        // Each user's prompts in her graphical session, where the unit is installed.
        if access("/usr/lib/systemd/user/\(promptsUnit)", F_OK) == 0 || access("/usr/local/lib/systemd/user/\(promptsUnit)", F_OK) == 0 {
            _ = await run("/usr/bin/systemctl", ["--global", group == nil ? "disable" : "enable", promptsUnit])
        }
        if systemdRuns {
            _ = await run("/usr/bin/systemctl", ["daemon-reload"])
            if !(await run("/usr/bin/systemctl", ["try-restart", "touchgated.service"])) {
                notes.append("systemctl could not restart touchgated.service: restart it yourself")
            }
        } else {
            notes.append("systemd is not running here: restart touchgated with --passkeys (or "
                         + "TOUCHGATED_PASSKEYS=seat in its environment)")
        }
        return notes
    }
}

/// `{"enabled": …, "files": […], "notes": […]}`.
struct PasskeySetupReport: Encodable, Sendable {
    var enabled: Bool
    var files: [String]
    var notes: [String]
}

extension PasskeyCommand {
    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable",
            abstract: "Set this machine up for touchgated's passkey devices (as root).",
            discussion: """
                Writes \(PasskeySetup.modules) (load uhid at boot), \(PasskeySetup.uhidRule) \
                (/dev/uhid for touchgated's group only) and \(PasskeySetup.dropIn) (touchgated \
                opens /dev/uhid and makes the devices), loads uhid, reloads udev and restarts \
                touchgated. From then on each user with a store in touchgated gets a security key \
                of her own while she has a session at the seat; its node is hers alone. Undo with \
                touchgate passkey disable. Needs the udev rule \(PasskeySetup.nodeRule), which \
                the packages and make install-udev install.
                """)

        @OptionGroup var common: CommonOptions

        @Option(help: ArgumentHelp("touchgated's group (default touchgated).", valueName: "GROUP"))
        var group = "touchgated"

        func run() async throws {
            let group = group
            try await CommandRunner.run(json: common.json) { console in
                try PasskeySetup.requireRoot("enable")
                guard getgrnam(group) != nil else {
                    throw ServiceError(.notFound, "there is no group \(group): install the touchgated package (it makes "
                                       + "the user and group), or name touchgated's group with --group")
                }
                guard let found = PasskeySetup.nodeRuleDirectories.first(where: {
                    access("\($0)/\(PasskeySetup.nodeRule)", R_OK) == 0
                }) else {
                    throw ServiceError(.notFound, "the udev rule \(PasskeySetup.nodeRule), which keeps each passkey device "
                                       + "its owner's alone, is not installed (looked in "
                                       + PasskeySetup.nodeRuleDirectories.joined(separator: ", ")
                                       + "): install the touchgate package or run make install-udev; nothing was changed")
                }
                for file in PasskeySetup.files(group: group) {
                    if let existing = try? String(contentsOfFile: file.path, encoding: .utf8), !existing.contains(PasskeySetup.mark) {
                        throw ServiceError(.alreadyExists, "\(file.path) exists and is not Touchgate's; nothing was changed "
                                           + "(move it away first)")
                    }
                }
                for file in PasskeySetup.files(group: group) {
                    do {
                        try FileManager.default.createDirectory(atPath: PathText.deletingLastComponent(of: file.path),
                                                                withIntermediateDirectories: true)
                        try Data(file.text.utf8).write(to: URL(fileURLWithPath: file.path), options: .atomic)
                        chmod(file.path, 0o644)
                    } catch {
                        throw ServiceError(.error, "cannot write \(file.path): \(ErrorText.describe(error))")
                    }
                }
                var notes: [String] = []
                if access("/dev/uhid", F_OK) != 0, !(await PasskeySetup.run("/usr/sbin/modprobe", ["uhid"])) {
                    notes.append("modprobe uhid failed: this kernel may lack uhid (CONFIG_UHID); it is loaded at the next "
                                 + "boot if it has it")
                }
                notes += await PasskeySetup.apply(group: group)
                let files = PasskeySetup.paths
                console.result("passkeys", PasskeySetupReport(enabled: true, files: files, notes: notes),
                               text: (["Enabled: touchgated makes a passkey device for each user with a store while they "
                                       + "have a session at the seat (node rule: \(found)/\(PasskeySetup.nodeRule)).",
                                       "Wrote " + files.joined(separator: ", ") + "."] + notes).joined(separator: "\n"))
                return ExitStatus.success
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable", abstract: "Undo touchgate passkey enable (as root).",
            discussion: "Removes the files enable wrote (only those marked as Touchgate's) and restarts touchgated. "
                + "Passkeys stay in the vaults.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                try PasskeySetup.requireRoot("disable")
                var removed: [String] = []
                for path in PasskeySetup.paths {
                    guard let existing = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
                    guard existing.contains(PasskeySetup.mark) else {
                        throw ServiceError(.forbidden, "\(path) is not Touchgate's; nothing more was changed")
                    }
                    guard unlink(path) == 0 else {
                        throw ServiceError(.error, "cannot remove \(path): \(String(cString: strerror(errno)))")
                    }
                    removed.append(path)
                }
                let notes = removed.isEmpty ? [] : await PasskeySetup.apply(group: nil)
                console.result("passkeys", PasskeySetupReport(enabled: false, files: removed, notes: notes),
                               text: removed.isEmpty ? "Not enabled: none of enable's files is there."
                                   : (["Disabled: removed " + removed.joined(separator: ", ") + "."] + notes)
                                       .joined(separator: "\n"))
                return ExitStatus.success
            }
        }
    }
}
