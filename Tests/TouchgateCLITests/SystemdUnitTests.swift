import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The systemd units that install touchgated: they load without complaint, their
/// hardening scores as systemd's own assessment says, and the daemon works when systemd
/// hands it the socket (socket activation, exercised with systemd-socket-activate, which
/// needs no systemd as PID 1).
@Suite("touchgated's systemd units", .serialized, .timeLimit(.minutes(3)))
struct SystemdUnitTests {
    static let units = Fixtures.packageRoot.appendingPathComponent("systemd")
    /// The highest exposure `systemd-analyze security` may give the service ("OK" is up
    /// to 4.9; fprintd's own unit gets 5.x on Debian 12).
    static let maximumExposure = 2.5

    @Test("systemd-analyze verify loads both units, with ExecStart pointing at the built touchgated, without a warning")
    func unitsVerify() async throws {
        let verify = try SystemTool.systemdAnalyze.path()
        let staged = try TemporaryDirectory("touchgated-units")
        defer { staged.remove() }
        let (socket, service) = try Self.stageUnits(in: staged, daemon: Self.builtDaemon())

        let result = try await runProgram(verify, ["verify", socket, service], environment: ["SYSTEMD_LOG_COLOR": "0"])
        #expect(result.status == 0, "systemd-analyze verify: \(result.stdout)\(result.stderr)")
        #expect(result.stderr.isEmpty && result.stdout.isEmpty, "warnings: \(result.stdout)\(result.stderr)")

        // The check is not vacuous: a unit naming a missing program or an unknown system
        // call group is refused or warned about.
        var broken = try String(contentsOfFile: service, encoding: .utf8)
        broken = broken.replacingOccurrences(of: "@resources", with: "@no-such-group")
        try broken.write(toFile: service, atomically: true, encoding: .utf8)
        let warned = try await runProgram(verify, ["verify", socket, service])
        #expect(warned.stderr.contains("@no-such-group"), "\(warned.stderr)")
        try broken.replacingOccurrences(of: "ExecStart=" + (try Self.builtDaemon()), with: "ExecStart=/nonexistent/touchgated")
            .write(toFile: service, atomically: true, encoding: .utf8)
        let refused = try await runProgram(verify, ["verify", socket, service])
        #expect(refused.status != 0 && refused.stderr.contains("/nonexistent/touchgated"), "\(refused.stderr)")
    }

    @Test("systemd-analyze security rates the service's exposure at most 2.5, with each promised setting in force")
    func exposure() async throws {
        let analyze = try SystemTool.systemdAnalyze.path()
        let staged = try TemporaryDirectory("touchgated-units")
        defer { staged.remove() }
        let (_, service) = try Self.stageUnits(in: staged, daemon: Self.builtDaemon())
        let (figure, passed, report) = try await Self.assess(service, with: analyze)
        #expect(figure <= Self.maximumExposure, "exposure \(figure):\n\(report)")
        // The settings the install promises, each checked by systemd itself (✓ = in force).
        for setting in ["User=/DynamicUser=", "NoNewPrivileges=", "PrivateTmp=", "ProtectSystem=", "ProtectHome=",
                        "ProtectKernelTunables=", "ProtectKernelModules=", "ProtectKernelLogs=", "ProtectControlGroups=",
                        "ProtectClock=", "ProtectHostname=", "RestrictRealtime=", "LockPersonality=",
                        "MemoryDenyWriteExecute=", "SystemCallArchitectures=", "UMask=",
                        "RestrictAddressFamilies=~AF_(INET|INET6)", "SystemCallFilter=~@privileged",
                        "SystemCallFilter=~@resources", "CapabilityBoundingSet=~CAP_SYS_ADMIN"] {
            #expect(passed.contains(setting), "\(setting) not in force:\n\(report)")
        }
        print("touchgated.service: systemd-analyze security exposure \(figure)")
    }

    @Test("the fleet drop-in opens IP to the collector's address alone; the units still verify and rate at most 2.5")
    func fleetDropIn() async throws {
        let analyze = try SystemTool.systemdAnalyze.path()
        let staged = try TemporaryDirectory("touchgated-units")
        defer { staged.remove() }
        let (socket, service) = try Self.stageUnits(in: staged, daemon: Self.builtDaemon())
        let without = try await Self.assess(service, with: analyze)
        #expect(without.passed.contains("RestrictAddressFamilies=~AF_(INET|INET6)") && without.passed.contains("IPAddressDeny="),
                "\(without.report)")

        let directory = staged.path("touchgated.service.d")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.units.appendingPathComponent("touchgated-fleet.conf").path,
                                         toPath: directory + "/fleet.conf")
        let verified = try await runProgram(analyze, ["verify", socket, service], environment: ["SYSTEMD_LOG_COLOR": "0"])
        #expect(verified.status == 0 && verified.stderr.isEmpty, "\(verified.stdout)\(verified.stderr)")
        let with = try await Self.assess(service, with: analyze)
        // systemd read the drop-in: Internet sockets are allowed now, to an allow list only.
        #expect(!with.passed.contains("RestrictAddressFamilies=~AF_(INET|INET6)"), "\(with.report)")
        #expect(with.report.contains("IP address allow list"), "\(with.report)")
        #expect(with.exposure <= Self.maximumExposure && with.exposure > without.exposure,
                "\(without.exposure) → \(with.exposure):\n\(with.report)")
        print("touchgated.service with the fleet drop-in: exposure \(with.exposure) (\(without.exposure) without)")
    }

    @Test("socket-activated (LISTEN_FDS from systemd-socket-activate), touchgated serves the CLI in system mode")
    func socketActivation() async throws {
        let activate = try SystemTool.systemdSocketActivate.path()
        let rig = try await DaemonRig()
        let socketPath = rig.socketPath
        var command = [activate, "-l", socketPath, "-E", "STATE_DIRECTORY=\(rig.stateDirectory)",
                       "-E", "FP_VIRTUAL_IMAGE=\(rig.finger.socketPath)", "-E", "FP_DRIVERS_WHITELIST=virtual_image",
                       rig.binDirectory + "/touchgated"]
        if getuid() == 0 {
            // As installed: under a user of its own (the rig's stand-in for touchgated).
            chown(rig.home.path("run"), DaemonRig.daemonUID, DaemonRig.daemonUID)
            command = ["/usr/bin/setpriv", "--reuid=\(DaemonRig.daemonUID)", "--regid=\(DaemonRig.daemonUID)",
                       "--clear-groups", "--"] + command
        }
        // Started from a shell that leaves it running and prints its pid, so the daemon is
        // not a child this process waits on (Foundation's Process then left the first
        // client's exit unnoticed: a zombie and a hung test).
        let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let started = try await runProgram("/bin/sh", ["-c", "env -i PATH=/usr/bin:/bin \(quoted) </dev/null >>'\(rig.logPath)' 2>&1 & echo $!"])
        let pid = try #require(Int32(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)),
                               "could not start systemd-socket-activate: \(started.stderr)")
        defer { kill(pid, SIGKILL) }
        // systemd-socket-activate listens before it starts the daemon: wait for the socket.
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: socketPath) {
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(FileManager.default.fileExists(atPath: socketPath), "no socket at \(socketPath):\n\(rig.daemonLog)")

        let status = try await rig.run(["status", "--json"])
        #expect(status.status == 0, "\(status.stderrLines)\n\(rig.daemonLog)")
        #expect(status.json?["mode"] as? String == "system", "\(status.stdout)")
        #expect((status.json?["trust-boundary"] as? String)?.contains("touchgated under its own user") == true, "\(status.stdout)")
        // The daemon took the socket systemd passed rather than binding one of its own.
        #expect(rig.daemonLog.contains("serving on the socket systemd passed"), "\(rig.daemonLog)")
        // It uses $STATE_DIRECTORY, as StateDirectory= sets it.
        try await rig.initialize()
        #expect(FileManager.default.fileExists(atPath: rig.stateDirectory + "/users/\(getuid())/touchgate.sqlite"),
                "no store under STATE_DIRECTORY:\n\(rig.daemonLog)")
        let human = try await rig.run(["status"])
        #expect(human.stdout.contains("mode: system (touchgated)"), "\(human.stdout)")

        // SIGTERM, as systemctl stop sends it, ends it.
        kill(pid, SIGTERM)
        for _ in 0..<100 where Self.isRunning(pid) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!Self.isRunning(pid), "touchgated did not stop on SIGTERM:\n\(rig.daemonLog)")
    }

    /// Whether `pid` is a live process (not gone, not a zombie waiting for its new parent).
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[close...].hasPrefix(") Z")
    }

    /// The units copied into `directory`, the service's ExecStart set to `daemon`.
    static func stageUnits(in directory: TemporaryDirectory, daemon: String) throws -> (socket: String, service: String) {
        let service = try String(contentsOf: units.appendingPathComponent("touchgated.service"), encoding: .utf8)
        let execStart = "ExecStart=/usr/local/libexec/touchgated"
        try #require(service.contains("\n" + execStart + "\n"), "touchgated.service has no `\(execStart)` line")
        try service.replacingOccurrences(of: execStart, with: "ExecStart=" + daemon)
            .write(toFile: directory.path("touchgated.service"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: units.appendingPathComponent("touchgated.socket").path,
                                         toPath: directory.path("touchgated.socket"))
        return (directory.path("touchgated.socket"), directory.path("touchgated.service"))
    }

    /// `systemd-analyze security` of the staged `service`: the overall exposure, the
    /// settings it found in force (✓), and the whole report.
    static func assess(_ service: String, with analyze: String) async throws -> (exposure: Double, passed: Set<String>, report: String) {
        let result = try await runProgram(analyze, ["security", "--offline=yes", "--no-pager", service],
                                    environment: ["SYSTEMD_COLORS": "0", "COLUMNS": "250"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        let overall = try #require(lines.first { $0.contains("Overall exposure level for touchgated.service") },
                                   "no overall figure in:\n\(result.stdout)\(result.stderr)")
        let figure = try #require(overall.split(separator: " ").compactMap { Double($0) }.first, "no number in \(overall)")
        let passed = Set(lines.filter { $0.hasPrefix("✓") }
            .compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) })
        return (figure, passed, result.stdout)
    }

    /// The touchgated next to the built touchgate.
    static func builtDaemon() throws -> String {
        let path = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().appendingPathComponent("touchgated").path
        try #require(FileManager.default.isExecutableFile(atPath: path),
                     "\(path) is missing: build the package first (swift build --build-tests)")
        return path
    }
}

/// A program from a Debian package a test needs; a missing one fails the test with what to install.
struct SystemTool {
    let name: String
    let package: String

    static let systemdAnalyze = SystemTool(name: "systemd-analyze", package: "systemd")
    static let systemdSocketActivate = SystemTool(name: "systemd-socket-activate", package: "systemd")

    func path(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let found = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map { $0 + "/" + name }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(found, "`\(name)` not found: install the Debian package \(package) (apt-get install \(package))",
                            sourceLocation: sourceLocation)
    }
}
