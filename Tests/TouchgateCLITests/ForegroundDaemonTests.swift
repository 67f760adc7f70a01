import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// touchgated without systemd: in the foreground as its own user it makes the socket's
/// directory and serves; as root it refuses unless told; install-daemon.sh says exactly
/// what to run where systemd is not.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ForegroundDaemonTests {
    /// Starts touchgated with `arguments`, prefixed by `wrapper`; its standard error is collected.
    static func start(_ rig: DaemonRig, wrapper: [String], _ arguments: [String]) async throws
        -> (BackgroundProcess, LineCollector) {
        let command = wrapper + [rig.binDirectory + "/touchgated"] + arguments
            + ["--fleet-config", rig.home.path("no-fleet.conf")]
        let errors = LineCollector()
        let process = try await BackgroundProcess.start(
            command[0], Array(command.dropFirst()), environment: ["PATH": "/usr/bin:/bin", "FP_DRIVERS_WHITELIST": "virtual_image"],
            error: .lines { errors.append($0) })
        return (process, errors)
    }

    /// Waits up to 10 s for something to listen at `socket`.
    static func listens(_ socket: String, while process: BackgroundProcess) async throws -> Bool {
        for _ in 0..<100 where process.isRunning {
            if let client = try? RawClient(path: socket) {
                client.close()
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// setpriv to the daemon's user when root, as the foreground command in docs/DAEMON.md does.
    static var asDaemonUser: [String] {
        getuid() == 0
            ? ["/usr/bin/setpriv", "--reuid=\(DaemonRig.daemonUID)", "--regid=\(DaemonRig.daemonUID)", "--clear-groups", "--"]
            : []
    }

    @Test("touchgated makes the socket's missing directory, mode 0755, and serves there")
    func makesTheSocketDirectory() async throws {
        let rig = try await DaemonRig()
        if getuid() == 0 { chown(rig.home.path("run"), DaemonRig.daemonUID, DaemonRig.daemonUID) }
        let directory = rig.home.path("run") + "/fresh"
        let socket = directory + "/socket"
        #expect(!FileManager.default.fileExists(atPath: directory))
        let (process, errors) = try await Self.start(rig, wrapper: Self.asDaemonUser,
                                                     ["--socket", socket, "--state-dir", rig.stateDirectory])
        let listening = try await Self.listens(socket, while: process)
        await process.terminate(signal: SIGTERM)
        _ = await process.ended()
        #expect(listening, "\(errors.lines)")
        var info = stat()
        #expect(lstat(directory, &info) == 0 && info.st_mode & 0o7777 == 0o755, "mode \(String(info.st_mode & 0o7777, radix: 8))")
        if getuid() == 0 { #expect(info.st_uid == DaemonRig.daemonUID) }

        // Where its user may not make the directory, it says what to run.
        let (refused, said) = try await Self.start(rig, wrapper: Self.asDaemonUser,
                                                   ["--socket", "/proc/touchgate-missing/socket", "--state-dir", rig.stateDirectory])
        let status = await refused.ended()
        #expect(status == 1, "\(said.lines)")
        #expect(said.lines.joined().contains("cannot make /proc/touchgate-missing for the socket")
                && said.lines.joined().contains("sudo install -d -o touchgated -g touchgated -m 0755 /proc/touchgate-missing"),
                "\(said.lines)")
    }

    @Test("as root touchgated refuses to run, saying how to run it as its own user, unless given --allow-root")
    func refusesRootUnlessAllowed() async throws {
        guard getuid() == 0 else { return }  // only root can be refused for being root
        let rig = try await DaemonRig()
        let state = rig.home.path("root-state")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let socket = rig.home.path("run/root.socket")
        let (refused, said) = try await Self.start(rig, wrapper: [], ["--socket", socket, "--state-dir", state])
        let status = await refused.ended()
        let words = said.lines.joined(separator: "\n")
        #expect(status == 64, "\(words)")
        #expect(words.contains("refusing to run as root") && words.contains("--allow-root")
                && words.contains(" --user touchgated")
                && words.contains("--socket \(socket) --state-dir \(state)"), "\(words)")
        #expect(!FileManager.default.fileExists(atPath: socket), "it listened before refusing")

        let (allowed, _) = try await Self.start(rig, wrapper: [], ["--socket", socket, "--state-dir", state, "--allow-root"])
        let listening = try await Self.listens(socket, while: allowed)
        await allowed.terminate(signal: SIGTERM)
        _ = await allowed.ended()
        #expect(listening)
    }

    @Test("--user gives away only directories it made: a symbolic link or another user's directory is refused, its target untouched")
    func userRefusesLinksAndOthersDirectories() async throws {
        guard getuid() == 0 else { return }  // --user is for a start as root
        let name = "nobody"
        let user = try #require(getpwnam(name)?.pointee.pw_uid, "this test needs the user nobody (base-passwd)")
        let rig = try await DaemonRig()
        let socket = rig.home.path("user-run/socket")
        // A state directory that is a link to a directory of root's: refused, and the target
        // stays root's (a chown through the link would give it away).
        let target = rig.home.path("roots-own")
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let link = rig.home.path("state-link")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let (linked, saidLinked) = try await Self.start(rig, wrapper: [], ["--user", name, "--socket", socket, "--state-dir", link])
        #expect(await linked.ended() == 1, "\(saidLinked.lines)")
        #expect(saidLinked.lines.joined().contains("is not a directory (a symbolic link is not accepted)"), "\(saidLinked.lines)")
        var info = stat()
        #expect(stat(target, &info) == 0 && info.st_uid == 0, "the link's target was given to uid \(info.st_uid)")

        // One that belongs to another user: refused, left as it is.
        let others = rig.home.path("others-state")
        try FileManager.default.createDirectory(atPath: others, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        chown(others, DaemonRig.daemonUID, DaemonRig.daemonUID)
        let (foreign, saidForeign) = try await Self.start(rig, wrapper: [], ["--user", name, "--socket", socket, "--state-dir", others])
        #expect(await foreign.ended() == 1, "\(saidForeign.lines)")
        #expect(saidForeign.lines.joined().contains("belongs to uid \(DaemonRig.daemonUID), not to \(name)"), "\(saidForeign.lines)")
        #expect(stat(others, &info) == 0 && info.st_uid == DaemonRig.daemonUID)

        // Missing ones are made its user's, the socket's 0755 and the state 0700, before it
        // becomes that user (whatever happens after: this home is not nobody's to enter).
        let fresh = rig.home.path("fresh-state")
        let (made, _) = try await Self.start(rig, wrapper: [], ["--user", name, "--socket", socket, "--state-dir", fresh])
        for _ in 0..<100 where made.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        await made.terminate(signal: SIGTERM)
        #expect(lstat(fresh, &info) == 0 && info.st_uid == user && info.st_mode & 0o7777 == 0o700)
        #expect(lstat(rig.home.path("user-run"), &info) == 0 && info.st_uid == user && info.st_mode & 0o7777 == 0o755)
    }

    @Test("install-daemon.sh where systemd is not running installs nothing and prints the commands to run")
    func installDaemonWithoutSystemd() async throws {
        try #require(!FileManager.default.fileExists(atPath: "/run/systemd/system"),
                     "this test needs a machine (or container) where systemd is not running")
        let script = Fixtures.packageRoot.appendingPathComponent("scripts/install-daemon.sh").path
        let result = try await runProgram("/bin/bash", [script], environment: ["PATH": "/usr/bin:/bin", "PREFIX": "/opt/tg-test"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("so nothing was installed"), "\(result.stderr)")
        #expect(result.stderr.contains("sudo /opt/tg-test/sbin/touchgated --user touchgated"), "\(result.stderr)")
        #expect(result.stderr.contains("TOUCHGATE_SOCKET=/run/touchgate/socket"))
        #expect(!FileManager.default.fileExists(atPath: "/opt/tg-test"))
    }
}
