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
@Suite(.timeLimit(.minutes(10)))
struct PasskeyDeviceTests {
    @Test func libfido2ToolsUseTheUhidDevice() async throws {
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
            "--", "bash", clients + "/vm-passkey.sh", bin, fixtures, root + "/udev/69-touchgate-passkey.rules",
        ], environment: ["VM_TIMEOUT": "540"], timeout: 600)
        let checks = run.stdout.split(separator: "\n").filter { $0.hasPrefix("check ") }
        #expect(run.status == 0, "scripts/vm.sh run: exit \(run.status)\n\(run.stdout.suffix(4000))\n\(run.stderr.suffix(2000))")
        for name in ["device", "owner-only", "no-seat-mark", "token-listed", "token-info", "cred-made", "assert-uv",
                     "assert-flags-up-uv", "trail-sign-in"] {
            #expect(checks.contains("check \(name) ok"), "\(name): \(checks)")
        }
    }
}
