import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Two users made for one test (`useradd`), removed when it ends: the attacker and the
/// victim of the availability suite. Made, not borrowed from the system's accounts, so the
/// daemon sees ordinary login users with names of their own.
final class TestUsers: @unchecked Sendable {
    // @unchecked Sendable: set once in init.
    struct User: Sendable {
        let name: String
        let uid: UInt32
    }

    let attacker: User
    let victim: User

    init() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd"),
                     "this suite makes its users with useradd: apt-get install passwd")
        let tag = String(getpid() % 100_000) + String(Int.random(in: 100...999))
        attacker = try await Self.make("tga\(tag)")
        do {
            victim = try await Self.make("tgv\(tag)")
        } catch {
            Self.remove(attacker.name)
            throw error
        }
    }

    deinit {
        Self.remove(attacker.name)
        Self.remove(victim.name)
    }

    private static func make(_ name: String) async throws -> User {
        var made = (try? await runProgram("/usr/sbin/useradd", ["--no-create-home", "--shell", "/usr/sbin/nologin",
                                                         "--user-group", name]))
        // Another test (or tool) may hold /etc/passwd's lock for a moment.
        for _ in 0..<20 where made?.status != 0 {
            try await Task.sleep(for: .milliseconds(200))
            made = try? await runProgram("/usr/sbin/useradd", ["--no-create-home", "--shell", "/usr/sbin/nologin",
                                                        "--user-group", name])
        }
        try #require(made?.status == 0, "useradd \(name): \(made?.stderr ?? "did not run")")
        let entry = try #require(getpwnam(name), "useradd made \(name), but getpwnam does not find it")
        return User(name: name, uid: entry.pointee.pw_uid)
    }

    /// Blocking: it runs from deinit.
    private static func remove(_ name: String) {
        for _ in 0..<20 {
            if runToEndBlocking("/usr/sbin/userdel", [name]) == 0 { return }
            usleep(200_000)
        }
    }
}

/// A hostile local user's program, speaking the daemon's protocol as the attacker would:
/// a Python script run under `setpriv` as the attacker (or with the attacker's real uid and
/// root's effective uid, as sudo runs), printing one line per thing it did. It stays
/// running (holding its connections) until ``stop()``.
final class Attacker: @unchecked Sendable {
    // @unchecked Sendable: the process is started once; the lines are the collector's.
    /// The attacker's program, shared with the benchmark; passed with `-c`, since the
    /// attacker's user may not be able to read the checkout.
    static var script: String {
        get throws {
            try String(contentsOfFile: Fixtures.packageRoot.path + "/Tests/AttackPrograms/attack.py", encoding: .utf8)
        }
    }

    private let process: BackgroundProcess
    private let collected = LineCollector()

    /// Runs the script in `mode` as `uid` (with `effectiveRoot`: real uid `uid`, effective
    /// uid 0, as a set-user-ID root program such as sudo runs before it drops privileges).
    init(_ mode: [String], socket: String, uid: UInt32, effectiveRoot: Bool = false) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                     "the attacker is a Python script: apt-get install python3")
        let identity = effectiveRoot
            ? ["--ruid=\(uid)", "--euid=0", "--rgid=\(uid)", "--egid=0", "--keep-groups"]
            : ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"]
        let collected = collected
        process = try await BackgroundProcess.start(
            "/usr/bin/setpriv", identity + ["--", "/usr/bin/python3", "-c", try Self.script, socket] + mode,
            environment: ["PATH": "/usr/bin:/bin"], holdingInputOpen: true,  // it holds on until its input ends
            output: .lines { collected.append($0) }, error: .sameAsOutput)
    }

    /// Waits (up to `seconds`) for a line starting with `prefix`.
    func line(_ prefix: String, within seconds: Double = 60) async -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let found = collected.lines.first(where: { $0.hasPrefix(prefix) }) { return found }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Everything it printed so far.
    var output: [String] { collected.lines }

    /// Ends it, closing its connections.
    func stop() {
        process.stop()
    }
}

extension DaemonRig {
    /// The first log line containing `text`, waiting up to 10 s for it: the socket is bound
    /// before the daemon has set up (and logged) everything.
    func awaitLogLine(containing text: String) async -> Substring? {
        for _ in 0..<100 {
            if let line = logLines(containing: text).first { return line }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// The daemon's last 40 log lines: enough to see what it did last, without the
    /// thousands of lines an attack leaves.
    var logTail: String {
        daemonLog.split(separator: "\n").suffix(40).joined(separator: "\n")
    }

    /// Runs `arguments` as `uid` and returns the result with how long it took, in seconds.
    func timed(_ arguments: [String], presenting prints: [String] = [], stdin: Data? = nil,
               as uid: UInt32) async throws -> (result: CLIResult, seconds: Double) {
        let started = ContinuousClock.now
        let result = try await run(arguments, presenting: prints, stdin: stdin, as: uid)
        let elapsed = started.duration(to: .now)
        return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
