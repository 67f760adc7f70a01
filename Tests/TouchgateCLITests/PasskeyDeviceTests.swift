import Foundation
import Testing
import TouchgateTestSupport

/// The passkey authenticator on the real device path: `/dev/uhid`, which this machine's
/// kernel lacks, inside a small Debian VM (scripts/vm.sh: Debian's kernel and a debootstrap
/// root, under KVM where it can run Debian's kernel, qemu's emulation otherwise). There, as a
/// user of its own with the project's udev rule: the hidraw node is that user's alone and
/// carries no seat mark, and libfido2's own tools (`fido2-token -L` and `-I`, `fido2-cred -M`,
/// `fido2-assert -G -t uv=true`) list, register and sign in with the finger played on the
/// virtual reader (Tests/TouchgateCLITests/PasskeyClients/vm-passkey.sh).
// One VM at a time: two would share this machine's two cores under emulation.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct PasskeyDeviceTests {
    @Test func libfido2ToolsUseTheUhidDevice() async throws {
        try await Self.inVM("vm-passkey.sh", expecting: [
            "device", "owner-only", "no-seat-mark", "token-listed", "token-info", "cred-made", "assert-uv",
            "assert-flags-up-uv", "trail-sign-in", "serve-stops", "agent-device", "agent-assert-uv", "agent-trail-sign-in",
        ])
    }

    /// touchgated's own devices (vm-passkey-daemon.sh): `touchgate passkey enable` gives
    /// /dev/uhid to touchgated's group alone; with logind's stand-in, a session at the seat
    /// makes its user's device, hers alone (a second user gets her own and cannot open the
    /// first's), libfido2's tools register and sign in through touchgated with the finger on its
    /// reader, the end of a session removes that user's device only, kill -9 of the daemon
    /// takes every device with it and a new daemon makes the seat's again, stopping the daemon
    /// removes the rest, and disable undoes enable. `touchgate passkey prompts` shows her each
    /// request for her finger as a desktop notice naming the site, and withdraws it; the other
    /// user's shows nothing of hers.
    @Test func touchgatedKeepsADeviceForEachUserAtTheSeat() async throws {
        try await Self.inVM("vm-passkey-daemon.sh", expecting: Self.daemonChecks)
    }

    /// Debian's Chromium, headless under chromedriver (python3-selenium), registers and signs in
    /// on a page at http://localhost with the device `passkey serve --uhid` makes: the real
    /// USB path, not DevTools' virtual authenticator; the page checks the assertion's signature
    /// with the registered key (WebCrypto), and the trail has both ceremonies
    /// (vm-passkey-chromium.sh, in an image of its own with the browser: about 1.5 minutes to
    /// build, then about 1.5 to run under emulation).
    @Test func chromiumRegistersAndSignsInWithTheDevice() async throws {
        try await Self.inVM("vm-passkey-chromium.sh", expecting: [
            "init", "enroll", "device", "chromium-registered", "chromium-signed-in", "trail-made", "trail-sign-in",
        ], environment: ["VM_IMAGE_NAME": "chromium", "VM_EXTRA_PACKAGES": "chromium chromium-driver python3-selenium",
                         "VM_MEMORY": "2048"])
    }

    /// What vm-passkey-daemon.sh checks, with the build's programs; DebianPackageTests runs it
    /// again with the packages installed in the VM, adding `packagedChecks`.
    static let packagedChecks = ["packages-installed", "packaged-node-rule", "packaged-prompts-unit"]
    static let daemonChecks = [
            "enable-exit", "enable-files", "uhid-daemon-group", "uhid-not-users", "logind-up", "daemon-up", "init-tester",
            "init-second", "enroll", "notifier-up", "no-session-no-device", "tester-device", "tester-owner-only", "no-seat-mark",
            "second-device", "second-owner-only", "two-devices", "second-cannot-open-testers", "tester-lists-own",
            "prompts-watching", "cred-made", "assert-uv", "prompt-names-site", "prompt-ended", "notice-names-site",
            "notice-withdrawn", "other-user-sees-nothing", "trail-sign-in", "passkey-in-store", "second-has-none", "tester-device-removed",
            "second-device-stays", "killed-devices-gone", "restarted-device-back", "restarted-no-ended-session", "daemon-stops", "devices-gone-with-daemon", "disable-files", "uhid-root-again",
    ]

    /// Runs `script` of PasskeyClients as root in the VM with the build's programs, the
    /// fixtures and the udev rule shared in, and expects each of `checks` to print "ok".
    /// With `debs`, a directory of built packages, shared too and named to the script.
    /// `environment` is scripts/vm.sh's (an image of its own, more memory).
    static func inVM(_ script: String, expecting checks: [String], debs: String? = nil,
                     environment: [String: String] = [:]) async throws {
        for (tool, package) in [("/usr/bin/qemu-system-x86_64", "qemu-system-x86"), ("/usr/sbin/debootstrap", "debootstrap"),
                                ("/usr/sbin/mkfs.ext4", "e2fsprogs")] {
            try #require(FileManager.default.isExecutableFile(atPath: tool),
                         "this test boots a VM and needs \(tool): apt-get install \(package) (scripts/setup.sh installs it)")
        }
        let root = Fixtures.packageRoot.path
        let bin = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().path
        let fixtures = Fixtures.directory.path
        let clients = root + "/Tests/TouchgateCLITests/PasskeyClients"
        let run = try await runProgram("/bin/bash", [
            root + "/scripts/vm.sh", "run", "--share", bin, "--share", fixtures, "--share", clients, "--share", root + "/udev",
        ] + (debs.map { ["--share", $0] } ?? []) + [
            "--", "bash", clients + "/" + script, bin, fixtures, root + "/udev/69-touchgate-passkey.rules",
        ] + (debs.map { [$0] } ?? []), environment: ["VM_TIMEOUT": "540"].merging(environment) { $1 }, timeout: 900)
        let printed = run.stdout.split(separator: "\n").filter { $0.hasPrefix("check ") }
        #expect(run.status == 0, "scripts/vm.sh run: exit \(run.status)\n\(run.stdout.suffix(4000))\n\(run.stderr.suffix(2000))")
        for name in checks {
            #expect(printed.contains("check \(name) ok"), "\(name): \(printed)")
        }
    }
}
