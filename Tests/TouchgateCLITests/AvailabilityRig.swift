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

    init() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd"),
                     "this suite makes its users with useradd: apt-get install passwd")
        let tag = String(getpid() % 100_000) + String(Int.random(in: 100...999))
        attacker = try Self.make("tga\(tag)")
        do {
            victim = try Self.make("tgv\(tag)")
        } catch {
            Self.remove(attacker.name)
            throw error
        }
    }

    deinit {
        Self.remove(attacker.name)
        Self.remove(victim.name)
    }

    private static func make(_ name: String) throws -> User {
        var made = (try? runProgram("/usr/sbin/useradd", ["--no-create-home", "--shell", "/usr/sbin/nologin",
                                                         "--user-group", name]))
        // Another test (or tool) may hold /etc/passwd's lock for a moment.
        for _ in 0..<20 where made?.status != 0 {
            usleep(200_000)
            made = try? runProgram("/usr/sbin/useradd", ["--no-create-home", "--shell", "/usr/sbin/nologin",
                                                        "--user-group", name])
        }
        try #require(made?.status == 0, "useradd \(name): \(made?.stderr ?? "did not run")")
        let entry = try #require(getpwnam(name), "useradd made \(name), but getpwnam does not find it")
        return User(name: name, uid: entry.pointee.pw_uid)
    }

    private static func remove(_ name: String) {
        for _ in 0..<20 {
            if (try? runProgram("/usr/sbin/userdel", [name]))?.status == 0 { return }
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
    static let script = #"""
        import json, socket, sys, time
        path, mode = sys.argv[1], sys.argv[2]
        args = sys.argv[3:]

        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return s, s.makefile("rb")

        def request(s, op, arguments, ident=1):
            line = {"version": 1, "kind": "request", "id": ident, "operation": op, "arguments": arguments}
            s.sendall((json.dumps(line) + "\n").encode())

        def say(*words):
            print(*words, flush=True)

        held = []
        if mode == "idle":
            # N connections that only take their hello and sit.
            greeted = refused = 0
            for _ in range(int(args[0])):
                s, f = connect()
                first = f.readline().decode()
                if '"hello"' in first:
                    greeted += 1
                    held.append(s)
                else:
                    refused += 1
                    say("refusal", first.strip())
            say("idle", greeted, refused)
        elif mode == "stall":
            # N connections that each send one request and never read another byte.
            op, arguments, count = args[0], json.loads(args[1]), int(args[2])
            for _ in range(count):
                s, f = connect()
                f.readline()
                request(s, op, arguments)
                held.append(s)
            say("stalled", count)
        elif mode == "await":
            # One request, read to its end; answers nothing it is asked.
            op, arguments = args[0], json.loads(args[1])
            s, f = connect()
            f.readline()
            started = time.monotonic()
            request(s, op, arguments)
            while True:
                line = f.readline().decode()
                if not line:
                    say("closed", round(time.monotonic() - started, 2))
                    break
                message = json.loads(line)
                if message["kind"] == "ask":
                    say("asked", message["question"]["kind"])
                if message["kind"] in ("result", "failure"):
                    code = message.get("error", {}).get("code", "ok")
                    say("ended", code, round(time.monotonic() - started, 2), json.dumps(message.get("error", {}).get("message", "")))
                    break
        elif mode == "loop":
            # N requests one after the other on one connection, counting the answers by code.
            op, arguments, count = args[0], json.loads(args[1]), int(args[2])
            s, f = connect()
            f.readline()
            codes = {}
            for ident in range(1, count + 1):
                request(s, op, arguments, ident)
                message = json.loads(f.readline().decode())
                code = message.get("error", {}).get("code", "ok") if message["kind"] == "failure" else "ok"
                codes[code] = codes.get(code, 0) + 1
            say("codes", json.dumps(codes, sort_keys=True))
        say("ready")
        sys.stdin.read()
        """#

    private let process = Process()
    private let collected = LineCollector()

    /// Runs the script in `mode` as `uid` (with `effectiveRoot`: real uid `uid`, effective
    /// uid 0, as a set-user-ID root program such as sudo runs before it drops privileges).
    init(_ mode: [String], socket: String, uid: UInt32, effectiveRoot: Bool = false) throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                     "the attacker is a Python script: apt-get install python3")
        let identity = effectiveRoot
            ? ["--ruid=\(uid)", "--euid=0", "--rgid=\(uid)", "--egid=0", "--keep-groups"]
            : ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"]
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = identity + ["--", "/usr/bin/python3", "-c", Self.script, socket] + mode
        process.environment = ["PATH": "/usr/bin:/bin"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = Pipe()
        try process.run()
        // The reader holds the collector, not the attacker, so dropping the attacker stops it.
        Thread.detachNewThread { [collected] in
            var pending = Data()
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[(newline + 1)...])
                    collected.append(line)
                }
            }
        }
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
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

extension DaemonRig {
    /// Runs `arguments` as `uid` and returns the result with how long it took, in seconds.
    func timed(_ arguments: [String], presenting prints: [String] = [], stdin: Data? = nil,
               as uid: UInt32) async throws -> (result: CLIResult, seconds: Double) {
        let started = ContinuousClock.now
        let result = try await run(arguments, presenting: prints, stdin: stdin, as: uid)
        let elapsed = started.duration(to: .now)
        return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
