import Foundation
import Testing
import TouchgateSocket
import TouchgateTestSupport
import TouchgateAPI
import TouchgateDaemon
#if canImport(Glibc)
import Glibc
#endif

/// touchgated started by the tests on a temporary socket, with the real `touchgate`
/// binary as its client: the same commands, outputs and exit codes as in-process, each
/// user confined to their own store, and a protocol that survives hostile clients.
@Suite("touchgated", .serialized)
struct DaemonTests {
    @Test("the quick-start flow runs through the daemon, and nothing lands in the client's home or keyring")
    func quickStartThroughTheDaemon() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        _ = try await rig.run(["status"])
        let keysBefore = DaemonRig.kernelKeys(of: DaemonRig.daemonUID)
        try await rig.initialize()
        let stored = try await rig.run(["secret", "add", "api", "--policy", "biometry-any", "--fresh", "--json"],
                                       stdin: Data("token-123\n".utf8))
        #expect(stored.status == 0, "\(stored.stderrLines)")
        let released = try await rig.run(["secret", "get", "api", "--json"], presenting: ["whorl"])
        #expect(released.status == 0, "\(released.stderrLines)\n\(rig.daemonLog)")
        #expect(released.json?["value"] as? String == "token-123")
        let refused = try await rig.run(["secret", "get", "api", "--json"], presenting: ["arch"])
        #expect(refused.status == 1, "a finger that does not match is no-match (exit 1): \(refused.stderrLines)")
        #expect(!refused.stdout.contains("token-123"))

        let status = try await rig.run(["status", "--json"])
        #expect(status.json?["mode"] as? String == "system", "\(status.stdout)")
        let audit = try await rig.run(["audit", "verify", "--json"])
        #expect(audit.status == 0, "\(audit.stdout)")
        // Records name the client who asked (its uid and process), not the daemon's user.
        let shown = try await rig.run(["audit", "show", "--json", "--event", "item.read"])
        let records = (shown.json?["records"] as? [[String: Any]]) ?? []
        #expect(!records.isEmpty, "\(shown.stdout)")
        for record in records {
            let reason = (record["reason"] as? String) ?? ""
            #expect(record["uid"] as? Int == Int(getuid()), "\(record)")
            #expect(reason.contains("via pid ") && reason.contains("touchgate"), "\(record)")
        }

        // The store is the daemon's, private to it; the client's own data directory stays empty,
        // and the vault key is in no kernel keyring.
        #expect(!FileManager.default.fileExists(atPath: rig.home.path("client/data/touchgate")))
        let userStore = rig.stateDirectory + "/users/\(getuid())"
        var info = stat()
        #expect(stat(rig.stateDirectory, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(stat(userStore + "/touchgate.sqlite", &info) == 0 && info.st_mode & 0o077 == 0)
        if getuid() == 0 {
            #expect(DaemonRig.kernelKeys(of: DaemonRig.daemonUID) == keysBefore,
                    "the daemon put a key in a kernel keyring while its vault was unlocked")
        }
    }

    @Test("the log: a line per message, a line per request only at --log-level debug, syslog priorities only into the journal")
    func logLevelsAndJournalPriorities() async throws {
        // Under systemd, JOURNAL_STREAM names the journal's stream that standard error is;
        // here it names the rig's log file, which the daemon's standard error is.
        let rig = try await DaemonRig()
        rig.daemonPrefix = ["/bin/sh", "-c", "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2); export JOURNAL_STREAM; exec \"$@\"", "sh"]
        try await rig.start()
        try await rig.initialize()
        _ = try await rig.run(["status"])
        rig.stop()
        let lines = rig.daemonLog.split(separator: "\n").filter { $0.contains("touchgated: ") }
        #expect(lines.contains { $0.hasPrefix("<6>touchgated: serving on ") }, "\(rig.daemonLog)")
        #expect(lines.allSatisfy { $0.hasPrefix("<") }, "a line without its priority: \(rig.daemonLog)")
        #expect(!lines.contains { $0.hasSuffix(": status") }, "a request logged at the default level: \(rig.daemonLog)")

        // Outside the journal: no priorities; at debug, each request's operation.
        let debug = try await DaemonRig()
        debug.daemonArguments = ["--log-level", "debug"]
        debug.daemonEnvironment = ["JOURNAL_STREAM": "1:1"]
        try await debug.start()
        _ = try await debug.run(["status"])
        debug.stop()
        #expect(debug.daemonLog.contains("touchgated: serving on "), "\(debug.daemonLog)")
        #expect(!debug.daemonLog.contains("<6>"), "\(debug.daemonLog)")
        #expect(debug.logLines(containing: ": status").count == 1, "\(debug.daemonLog)")

        // A message carrying a peer's text (an executable named with a newline) stays one line.
        let forged = StandardErrorLogHandler.line("uid=1000 pid=7 exe=/tmp/x\ntouchgated: uid=0 forged\u{1b}[2K: status",
                                                 program: "touchgated", priority: 7)
        #expect(forged == "<7>touchgated: uid=1000 pid=7 exe=/tmp/x\\u{000A}touchgated: uid=0 forged\\u{001B}[2K: status\n",
                "\(forged)")

        // A level that does not exist is a usage error, before anything starts.
        let bad = try await runProgram(debug.binDirectory + "/touchgated", ["--log-level", "loud", "--socket", "/nonexistent/s"])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("--log-level"), "\(bad.stderr)")
    }

    @Test("another user reaches only their own vault: cannot read, list, delete or lock out the first user's items")
    func usersAreKeptApart() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        _ = try await rig.run(["secret", "add", "api", "--policy", "biometry-any"], stdin: Data("token-123\n".utf8))
        let other = DaemonRig.otherUID

        let list = try await rig.run(["secret", "list", "--json"], as: other)
        #expect(list.status == 10, "the other user has no vault of their own (exit 10): \(list.stdout) \(list.stderrLines)")
        let get = try await rig.run(["secret", "get", "api", "--json"], presenting: ["whorl"], as: other)
        #expect(get.status == 10, "\(get.stderrLines)")
        #expect(!get.stdout.contains("token-123"))
        let remove = try await rig.run(["secret", "rm", "api", "--yes", "--json"], as: other)
        #expect(remove.status == 10, "\(remove.stderrLines)")
        let actAs = try await rig.run(["prints", "list", "--user", "root", "--json"], as: other)
        #expect(actAs.status == 11, "acting for another user needs root (exit 11): \(actAs.stderrLines)")
        #expect(actAs.stderrLines.joined().contains("needs root"))

        // Failed touches by the other user count against nobody but them.
        for _ in 0..<3 { _ = try await rig.run(["verify", "--json"], presenting: ["arch"], as: other) }
        let mine = try await rig.run(["secret", "get", "api", "--json"], presenting: ["whorl"])
        #expect(mine.status == 0 && mine.json?["value"] as? String == "token-123", "\(mine.stderrLines)")

        // The daemon's files cannot be read by the other user at all.
        let peek = try await runProgram("/usr/bin/setpriv", ["--reuid=\(other)", "--regid=\(other)", "--clear-groups",
                                                             "--", "/bin/cat",
                                                             rig.stateDirectory + "/users/\(getuid())/touchgate.sqlite"])
        #expect(peek.status != 0, "the other user read the daemon's store")
    }

    @Test("status and secret list, answered from what the daemon last read, stay each user's own and see every change, also from many processes at once")
    func readsKeptBetweenRequestsStayRight() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let other = DaemonRig.otherUID
        try await rig.initialize(as: other)
        let names = { (run: CLIResult) in ((run.json?["items"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String } }
        let items = { (run: CLIResult) in run.json?["items"] as? Int }
        #expect(try await rig.run(["secret", "add", "mine", "--policy", "passphrase"], stdin: Data("a\n".utf8)).status == 0)
        #expect(try await rig.run(["secret", "add", "theirs", "--policy", "passphrase"], stdin: Data("b\n".utf8),
                                  as: other).status == 0)
        // Each asks twice, in turn: the second answer of each comes from what the daemon kept.
        for _ in 0..<2 {
            #expect(names(try await rig.run(["secret", "list", "--json"])) == ["mine"])
            #expect(names(try await rig.run(["secret", "list", "--json"], as: other)) == ["theirs"])
            #expect(items(try await rig.run(["status", "--json"])) == 1)
            #expect(items(try await rig.run(["status", "--json"], as: other)) == 1)
        }
        // Six stores and six reads at once (within a user's 16 connections): every store is
        // seen once all have returned.
        try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<6 {
                group.addTask {
                    try await rig.run(["secret", "add", "item\(index)", "--policy", "passphrase"], stdin: Data("v\n".utf8)).status
                }
                group.addTask { try await rig.run(["status", "--json"]).status }
            }
            for try await status in group { #expect(status == 0) }
        }
        #expect(items(try await rig.run(["status", "--json"])) == 7)
        #expect(Set(names(try await rig.run(["secret", "list", "--json"]))) == Set(["mine"] + (0..<6).map { "item\($0)" }))
        #expect(names(try await rig.run(["secret", "list", "--json"], as: other)) == ["theirs"])
    }

    @Test("a client killed while the reader waits for a finger releases the reader for the next request")
    func clientKilledMidTouch() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        rig.finger.present([])
        let killed = try await rig.client().run(["verify", "--json"]) { line, process in
            if VirtualImageFinger.isPrompt(line) { kill(process.processIdentifier, SIGKILL) }
        }
        #expect(killed.status == 128 + SIGKILL)
        let next = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(next.status == 0, "the reader was not released: \(next.stderrLines)\n\(rig.daemonLog)")
        // Released to the pool, still open: the cancelled operation left it usable, not closed.
        #expect(rig.logLines(containing: "stays open for the next requests").count == 1, "\(rig.daemonLog)")
    }

    @Test("kill -9 of the daemon loses no committed item or audit record, and it restarts cleanly")
    func daemonKilledRestarts() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let stored = try await rig.run(["secret", "add", "api", "--policy", "passphrase"], stdin: Data("v\n".utf8))
        #expect(stored.status == 0)
        rig.stop(signal: SIGKILL)
        try await rig.start()
        let list = try await rig.run(["secret", "list", "--json"])
        #expect(list.stdout.contains("\"api\""), "\(list.stdout)")
        let audit = try await rig.run(["audit", "verify", "--json"])
        #expect(audit.status == 0, "\(audit.stdout) \(audit.stderrLines)")
        // The key died with the process: the vault is locked until the passphrase again.
        let status = try await rig.run(["status", "--json"])
        #expect(status.json?["locked"] as? Bool == true, "\(status.stdout)")
        let unlocked = try await rig.withPassphrase(["unlock"])
        #expect(unlocked.status == 0)
    }

    @Test("malformed, oversized and out-of-order messages get an error and a closed connection; the daemon serves on")
    func hostileClients() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        let oversized = [UInt8](repeating: UInt8(ascii: "a"), count: DaemonProtocol.maximumLineBytes + 10)
        let hostile: [(String, [UInt8])] = [
            ("not JSON", Array("hello there\n".utf8)),
            ("JSON but no message", Array("{\"a\":1}\n".utf8)),
            ("an unknown operation", Array("{\"version\":1,\"kind\":\"request\",\"id\":1,\"operation\":\"rm -rf\"}\n".utf8)),
            ("another version", Array("{\"version\":99,\"kind\":\"request\",\"id\":1,\"operation\":\"status\"}\n".utf8)),
            ("an answer to no question", Array("{\"version\":1,\"kind\":\"answer\",\"id\":1,\"confirmed\":true}\n".utf8)),
            ("a secret too long", Array("{\"version\":1,\"kind\":\"answer\",\"id\":1,\"secret-length\":99999999}\n".utf8)),
            ("a line over the limit", oversized),
            ("invalid UTF-8", [0x7B, 0xFF, 0xFE, 0x7D, 0x0A]),
        ]
        for (what, bytes) in hostile {
            let socket = try FramedSocket.connect(path: rig.socketPath)
            socket.sendRaw(bytes)
            var replies: [DaemonMessage] = []
            for try await frame in socket.frames() {
                replies.append(try frame.decode(DaemonMessage.self))
            }
            #expect(replies.first?.kind == .hello, "\(what)")
            #expect(replies.last?.kind == .failure && replies.last?.error?.code == .usage,
                    "\(what): \(replies.map(\.kind))")
        }
        // A client that sends half a message and vanishes, and many clients at once.
        let half = try FramedSocket.connect(path: rig.socketPath)
        half.sendRaw(Array("{\"version\":1,\"kind\":\"req".utf8))
        half.close()
        try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<10 { group.addTask { try await rig.run(["status", "--json"]).status } }
            for try await status in group { #expect(status == 0) }
        }
        #expect(!rig.daemonLog.contains("fatal signal"), "\(rig.daemonLog)")
    }

    @Test("an operation's arguments are read by their type: a missing, mistyped or unknown one is a usage failure naming it, and the connection serves on")
    func typedArgumentsAreChecked() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        let socket = try FramedSocket.connect(path: rig.socketPath)
        defer { socket.close() }
        var frames = socket.frames().makeAsyncIterator()
        #expect(try await frames.next().map { try $0.decode(DaemonMessage.self).kind } == .hello)
        let cases: [(operation: String, arguments: String, names: String)] = [
            ("enroll", "{}", "finger"),
            ("secret.get", "{\"item\":5}", "item"),
            ("secret.rm", "{\"can-ask-again\":true}", "item"),
            ("audit.prune", "{\"before\":\"yesterday\"}", "before"),
            ("init", "{\"stretching\":\"none\"}", "stretching"),
            ("audit.export", "{\"format\":\"xml\"}", "format"),
            ("policy.set", "{\"lockout-threshold\":\"many\"}", "lockout-threshold"),
        ]
        var id: UInt64 = 0
        for (operation, arguments, name) in cases {
            id += 1
            socket.sendRaw(Array("{\"version\":1,\"kind\":\"request\",\"id\":\(id),\"operation\":\"\(operation)\",\"arguments\":\(arguments)}\n".utf8))
            var reply: DaemonMessage?
            while let frame = try await frames.next() {
                let message = try frame.decode(DaemonMessage.self)
                if message.kind == .failure || message.kind == .result { reply = message; break }
            }
            #expect(reply?.kind == .failure && reply?.id == id && reply?.error?.code == .usage,
                    "\(operation) \(arguments): \(String(describing: reply))")
            #expect(reply?.error?.message.contains(name) == true, "\(operation): \(reply?.error?.message ?? "")")
        }
        id += 1
        socket.sendRaw(Array("{\"version\":1,\"kind\":\"request\",\"id\":\(id),\"operation\":\"status\"}\n".utf8))
        var last: DaemonMessage?
        while let frame = try await frames.next() {
            last = try frame.decode(DaemonMessage.self)
            if last?.kind == .failure || last?.kind == .result { break }
        }
        #expect(last?.kind == .result && last?.id == id, "the same connection serves on")
        #expect(!FileManager.default.fileExists(atPath: rig.stateDirectory + "/users/0/touchgate.sqlite"),
                "no refused request made a store")
    }
}
