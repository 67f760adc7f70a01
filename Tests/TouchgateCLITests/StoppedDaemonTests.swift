import Foundation
import Testing
import TouchgateTestSupport

/// Where the daemon is enabled but stopped, `touchgate` says so and how to start it; it never
/// answers from an empty personal store ("no vault yet, run init") while the vault is in the
/// daemon's. Run in a mount namespace of its own, where /run and systemd's unit directory are
/// the test's: touchgated.socket enabled (its symlink) or not, and no socket.
@Suite struct StoppedDaemonTests {
    /// Runs `arguments` with no TOUCHGATE_SOCKET, as a person's shell would, with the
    /// socket unit enabled or not and nothing listening at /run/touchgate/socket.
    private func run(_ arguments: [String], enabled: Bool, home: TemporaryDirectory) async throws -> CLIResult {
        try HelperRig.require("/usr/bin/unshare", package: "util-linux")
        let units = home.path("units")
        try FileManager.default.createDirectory(atPath: units + "/sockets.target.wants", withIntermediateDirectories: true)
        let link = units + "/sockets.target.wants/touchgated.socket"
        if enabled, (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == nil {
            try FileManager.default.createSymbolicLink(atPath: link,
                                                       withDestinationPath: "/usr/local/lib/systemd/system/touchgated.socket")
        }
        let script = """
            set -e
            mkdir -p /etc/systemd/system
            mount --bind "$TEST_UNITS" /etc/systemd/system
            mount -t tmpfs -o mode=0755 tmpfs /run
            exec "$0" "$@"
            """
        var process = CLIProcess(environment: ["HOME": home.path("home"), "XDG_DATA_HOME": home.path("data"),
                                               "XDG_CONFIG_HOME": home.path("config"), "TEST_UNITS": units,
                                               "FP_DRIVERS_WHITELIST": "none"])
        process.wrapper = ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script]
        return try await process.run(arguments)
    }

    @Test("touchgated enabled but stopped: status and secret list say it is stopped and how to start it, never 'run: touchgate init'")
    func stoppedIsReportedAsStopped() async throws {
        let home = try TemporaryDirectory("touchgate-stopped")
        defer { home.remove() }
        for arguments in [["status"], ["secret", "list"], ["status", "--json"]] {
            let result = try await run(arguments, enabled: true, home: home)
            let said = result.stderrLines.joined(separator: "\n")
            #expect(result.status == 75, "\(arguments): \(result.stdout) \(said)")
            #expect(said.contains("touchgated is not running") && said.contains("sudo systemctl start touchgated.socket"),
                    "\(arguments): \(said)")
            #expect(said.contains("TOUCHGATE_SOCKET="), "the way to a personal vault is named: \(said)")
            #expect(!(result.stdout + said).contains("touchgate init"), "\(arguments): \(result.stdout)")
        }
        let json = try await run(["status", "--json"], enabled: true, home: home)
        #expect(json.json?["error"] as? String == "daemon-unavailable", "\(json.stdout)")
        // Nothing was made in the person's home meanwhile.
        #expect(!FileManager.default.fileExists(atPath: home.path("data") + "/touchgate"))
    }

    @Test("with touchgated not enabled and not running, touchgate is the personal mode")
    func notEnabledIsPersonal() async throws {
        let home = try TemporaryDirectory("touchgate-personal")
        defer { home.remove() }
        let result = try await run(["status", "--json"], enabled: false, home: home)
        #expect(result.status == 0, "\(result.stderrLines)")
        #expect(result.json?["mode"] as? String == "personal", "\(result.stdout)")
    }
}
