import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// touchgated's passkey devices and their setup, on this machine (the devices themselves,
/// which need /dev/uhid, are PasskeyDeviceTests' in a VM): what the daemon says when the
/// kernel cannot make them, and what `passkey enable` and `passkey prompts` say to someone
/// who cannot use them.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PasskeySetupTests {
    @Test("touchgated --passkeys with a user at the seat: where the kernel has no uhid, the log says what is missing and what sets it up, once, and every request is still served; where it has, the device is made and goes with the session")
    func daemonDevicesFollowTheSeat() async throws {
        let logind = try await LogindRig()
        defer { logind.stop() }
        let rig = try await DaemonRig()
        rig.daemonEnvironment = logind.environment.merging(["TOUCHGATED_PASSKEYS": "seat"]) { $1 }
        try await rig.start()
        defer { rig.stop() }
        try await rig.initialize()
        #expect(rig.logLines(containing: "passkey devices: one for each user with a store here").count == 1, "\(rig.daemonLog)")
        try await logind.addSession("c1", uid: getuid(), user: "root", remote: false)
        let uhid = access("/dev/uhid", F_OK) == 0
        let expected = uhid ? "passkey device made for uid \(getuid())" : "cannot open /dev/uhid"
        for _ in 0..<100 where rig.logLines(containing: expected).isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        // Three more passes of the seat: the failure is not said again.
        try await Task.sleep(for: .seconds(6))
        #expect(rig.logLines(containing: expected).count == 1, "\(rig.daemonLog)")
        if !uhid {
            #expect(rig.logLines(containing: "touchgate passkey enable sets both up").count == 1, "\(rig.daemonLog)")
        }
        let status = try await rig.run(["status", "--json"])
        #expect(status.status == 0, "\(status.stderrLines)")
        if uhid {
            try await logind.removeSession("c1")
            for _ in 0..<100 where rig.logLines(containing: "removed: no session of theirs").isEmpty {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(rig.logLines(containing: "removed: no session of theirs").count == 1, "\(rig.daemonLog)")
        }
    }

    @Test("passkey enable and disable as a user change nothing and say to run them as root; passkey prompts without touchgated says it needs it")
    func setupNeedsRootAndPromptsNeedTheDaemon() async throws {
        try HelperRig.require("/usr/bin/setpriv", package: "util-linux")
        let rig = try HelperRig()
        defer { rig.home.remove() }
        for command in ["enable", "disable"] {
            let run = try await rig.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                             CLIProcess.binary, "passkey", command, "--json"])
            #expect(run.status == 11 && run.json?["error"] as? String == "forbidden"
                    && (run.json?["message"] as? String ?? "").contains("sudo touchgate passkey \(command)"),
                    "\(command): \(run.status) \(run.stdout)")
        }
        #expect(access("/etc/modules-load.d/touchgate-passkey.conf", F_OK) != 0)
        let prompts = try await rig.run(rig.bin + "/touchgate", ["passkey", "prompts", "--json"])
        #expect(prompts.status == 75 && (prompts.json?["message"] as? String ?? "").contains("touchgated is not running"),
                "\(prompts.status) \(prompts.stdout)")
    }
}
