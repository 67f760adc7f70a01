import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The thin `touchgate` front speaks to touchgated itself for `status`, `secret list`,
/// `verify` and `secret get`: here each such command is run through it and through `touchgate-cli` against the same
/// daemon and state, and the two must print the same bytes and exit the same way. Then the
/// front is given a hostile "daemon" and must fail cleanly, and Ctrl-C must cancel.
@Suite("the thin touchgate front", .serialized)
struct FastClientTests {
    /// Runs `arguments` through the front (`touchgate`) and then through `touchgate-cli`,
    /// each presented with `prints`.
    private func both(_ rig: DaemonRig, _ arguments: [String], presenting prints: [String] = [],
                      stdin: Data? = nil) async throws -> (front: CLIResult, cli: CLIResult) {
        let front = try await rig.run(arguments, presenting: prints, stdin: stdin)
        rig.finger.present(prints)
        var client = rig.client()
        client.binaryOverride = rig.binDirectory + "/touchgate-cli"
        let finger = rig.finger
        let cli = try await client.run(arguments, stdin: stdin) { line, _ in finger.handle(line) }
        return (front, cli)
    }

    private func expectSame(_ pair: (front: CLIResult, cli: CLIResult), _ what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(pair.front.status == pair.cli.status, "\(what): exit status", sourceLocation: sourceLocation)
        #expect(pair.front.stdout == pair.cli.stdout, "\(what): standard output", sourceLocation: sourceLocation)
        #expect(pair.front.stderrLines == pair.cli.stderrLines, "\(what): standard error", sourceLocation: sourceLocation)
    }

    /// The executable the daemon recorded for the last `item.read`/`verify` record: which
    /// binary really made the request.
    private func lastRequester(_ rig: DaemonRig) async throws -> String {
        let shown = try await rig.run(["audit", "show", "--json", "--limit", "3"])
        let records = (shown.json?["records"] as? [[String: Any]]) ?? []
        return records.compactMap { $0["reason"] as? String }.filter { $0.contains("via pid") }.last ?? shown.stdout
    }

    @Test("verify and secret get print the same bytes and exit the same way through the front as through touchgate-cli")
    func sameOutputAsTheFullCLI() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        // A value with every kind of character JSON escapes, and one that is not UTF-8 text.
        let text = "to\"k\\e/n é\u{1}\u{7f}\t😀"
        for (name, value) in [("api", Data((text + "\n").utf8)), ("blob", Data([0xFF, 0x00, 0xFE, 0x41, 0x80]))] {
            let stored = try await rig.run(["secret", "add", name, "--policy", "biometry-any"], stdin: value)
            #expect(stored.status == 0, "\(stored.stderrLines)")
        }
        let guarded = try await rig.run(["secret", "add", "pass", "--policy", "passphrase"], stdin: Data("p\n".utf8))
        #expect(guarded.status == 0, "\(guarded.stderrLines)")

        for json in [[], ["--json"]] {
            expectSame(try await both(rig, ["verify"] + json, presenting: ["whorl"]), "verify \(json): a match")
            #expect(try await lastRequester(rig).contains("touchgate-cli"))
            // A no-match counts toward the lockout; a match in between resets the count, so both
            // see the same attempts left.
            let front = try await rig.run(["verify"] + json, presenting: ["arch"])
            let requester = try await lastRequester(rig)
            #expect(requester.hasSuffix("(touchgate) at touchgated's socket)"),
                    "the front sent this request itself: \(requester)")
            _ = try await rig.run(["verify"], presenting: ["whorl"])
            var client = rig.client()
            client.binaryOverride = rig.binDirectory + "/touchgate-cli"
            rig.finger.present(["arch"])
            let finger = rig.finger
            let cli = try await client.run(["verify"] + json) { line, _ in finger.handle(line) }
            expectSame((front, cli), "verify \(json): no match")
            #expect(front.status == 1)
            _ = try await rig.run(["verify"], presenting: ["whorl"])

            // Inside the reuse window (opened by this first release): no touch, the value as stored.
            _ = try await rig.run(["secret", "get", "api"], presenting: ["whorl"])
            let released = try await both(rig, ["secret", "get", "api"] + json, presenting: ["whorl"])
            expectSame(released, "secret get \(json)")
            #expect(released.front.status == 0)
            if json.isEmpty {
                #expect(released.front.stdout == text)
            } else {
                #expect(released.front.json?["value"] as? String == text, "\(released.front.stdout)")
            }
            let blob = try await both(rig, ["secret", "get", "--device", "virtual_image", "blob"] + json, presenting: ["whorl"])
            expectSame(blob, "secret get blob \(json)")
            if !json.isEmpty {
                #expect(blob.front.json?["encoding"] as? String == "base64")
                #expect(blob.front.json?["value"] as? String == Data([0xFF, 0x00, 0xFE, 0x41, 0x80]).base64EncodedString())
            }
            // Failures: no such item (a name the terminal must not see raw), and, the vault
            // locked, a passphrase the daemon asks for where there is no terminal to ask on.
            let missing = try await both(rig, ["secret", "get", "no\u{1b}[31msuch"] + json)
            expectSame(missing, "secret get of a missing item \(json)")
            #expect(missing.front.status == 10)
            #expect(try await rig.run(["lock"]).status == 0)
            let asked = try await both(rig, ["secret", "get", "pass"] + json)
            expectSame(asked, "secret get that needs a passphrase \(json)")
            #expect(asked.front.status == 8, "\(asked.front.stderrLines)")
            #expect(try await rig.withPassphrase(["unlock"]).status == 0)
        }
        // Another user's name needs root: refused alike (or, as root, no prints for them).
        expectSame(try await both(rig, ["verify", "--user=nobody", "--json"], presenting: ["whorl"]), "verify --user")
        let audit = try await rig.run(["audit", "verify", "--json"])
        #expect(audit.status == 0, "\(audit.stdout)")
    }

    @Test("through the daemon every other command is touchgate-client, with touchgate-cli's output; the personal mode is handed to touchgate-cli")
    func otherCommandsGoThroughTheClient() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let stored = try await rig.run(["secret", "add", "api", "--policy", "biometry-any"], stdin: Data("v\n".utf8))
        #expect(stored.status == 0, "\(stored.stderrLines)")
        // The daemon names the process that connected (from /proc, not from the request: its
        // executable, or, when another user's, its name as the kernel keeps it, 15 bytes).
        let shown = try await rig.run(["audit", "show", "--json", "--event", "item.write"])
        let reasons = ((shown.json?["records"] as? [[String: Any]]) ?? []).compactMap { $0["reason"] as? String }
        #expect(reasons.last?.contains("touchgate-clien") == true, "\(reasons)")

        // The same bytes and statuses as touchgate-cli, for a result, a listing and a refusal.
        var cli = rig.client()
        cli.binaryOverride = rig.binDirectory + "/touchgate-cli"
        for arguments in [["secret", "list", "--json"], ["secret", "list"], ["policy", "show", "--json"],
                          ["secret", "rm", "no-such", "--yes"], ["prints", "list", "--json"], ["--version"]] {
            let front = try await rig.run(arguments)
            let full = try await cli.run(arguments)
            #expect(front.status == full.status, "\(arguments): exit status")
            #expect(front.stdout == full.stdout, "\(arguments): standard output")
            #expect(front.stderrLines == full.stderrLines, "\(arguments): standard error")
        }

        // `status` is the front's own too: the same report, read a moment apart (so the seconds
        // left in the reuse window, the key's expiry and the reader's temperature may have moved on).
        let timers = ["remaining-seconds", "key-expires", "temperature"]
        func withoutTimers(_ object: [String: Any]) -> NSDictionary {
            var object = object.filter { !timers.contains($0.key) }
            for (key, value) in object {
                if let nested = value as? [String: Any] { object[key] = withoutTimers(nested) }
                if let list = value as? [[String: Any]] { object[key] = list.map(withoutTimers) }
            }
            return object as NSDictionary
        }
        let frontStatus = try await rig.run(["status", "--json"])
        let fullStatus = try await cli.run(["status", "--json"])
        #expect(frontStatus.status == 0 && fullStatus.status == 0, "\(frontStatus.stderrLines) \(fullStatus.stderrLines)")
        #expect(withoutTimers(try #require(frontStatus.json)) == withoutTimers(try #require(fullStatus.json)),
                "\(frontStatus.stdout)\n\(fullStatus.stdout)")
        let frontText = try await rig.run(["status"])
        let fullText = try await cli.run(["status"])
        let untimed = { (run: CLIResult) in run.stdout.split(separator: "\n").filter { !$0.contains(" until ") && !$0.contains(" for the next ") } }
        #expect(frontText.status == fullText.status && untimed(frontText) == untimed(fullText),
                "\(frontText.stdout)\n\(fullText.stdout)")
        #expect(frontText.stdout.split(separator: "\n").count == fullText.stdout.split(separator: "\n").count)

        // `--version` is the front's own answer, in either mode: it needs no sibling to exec.
        let alone = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-front-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: alone, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: alone) }
        // Copied by cp, not by this process: a file this process held open for writing could be
        // inherited by a child another test forks meanwhile, and executing it then fails with
        // "Text file busy" for as long as that child lives.
        let copied = try await ProgramRun.run("/bin/cp", [rig.binDirectory + "/touchgate", alone.path + "/touchgate"],
                                              environment: [:])
        try #require(copied.status == 0, "\(copied.stderrLines)")
        var front = rig.client()
        front.binaryOverride = alone.path + "/touchgate"
        for socket in [rig.socketPath, ""] {
            front.environment["TOUCHGATE_SOCKET"] = socket
            let version = try await front.run(["--version"])
            let expected = try await cli.run(["--version"])
            #expect(version.status == 0 && version.stdout == expected.stdout,
                    "the front alone answers --version (\(version.stderrLines))")
        }
        // Through the daemon it serves status and secret list alone too (no sibling to exec here).
        front.environment["TOUCHGATE_SOCKET"] = rig.socketPath
        for arguments in [["status", "--json"], ["secret", "list"]] {
            let served = try await front.run(arguments)
            #expect(served.status == 0, "the front alone serves \(arguments): \(served.stderrLines)")
        }
        let listed = try await front.run(["secret", "list", "--json"])
        #expect((listed.json?["items"] as? [[String: Any]])?.first?["name"] as? String == "api", "\(listed.stdout)")
        // What it does not serve itself goes to touchgate-client, which is not here.
        let handed = try await front.run(["policy", "show"])
        #expect(handed.status == 127, "policy show is touchgate-client's: \(handed.stderrLines)")

        // Without a daemon to serve it, touchgate-client hands the command line to
        // touchgate-cli, which serves this user's own store in-process.
        var personal = rig.client()
        personal.binaryOverride = rig.binDirectory + "/touchgate-client"
        personal.environment["TOUCHGATE_SOCKET"] = ""
        let status = try await personal.run(["status", "--json"])
        #expect(status.status == 0, "\(status.stderrLines)")
        #expect(status.json?["mode"] as? String == "personal", "\(status.stdout)")
    }

    @Test("Ctrl-C while the front waits for a finger cancels, exits 130 and releases the reader")
    func interruptCancels() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        rig.finger.present([])
        let interrupted = try await rig.client().run(["verify", "--json"]) { line, process in
            if VirtualImageFinger.isPrompt(line) { kill(process.processIdentifier, SIGINT) }
        }
        #expect(interrupted.status == 130, "\(interrupted.stderrLines)")
        #expect(interrupted.json?["error"] as? String == "cancelled", "\(interrupted.stdout)")
        let next = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(next.status == 0, "the reader was not released: \(next.stderrLines)\n\(rig.daemonLog)")
    }

    @Test("a hostile daemon gets a clear error from the front, never a crash, a hang or a secret on the terminal",
          arguments: FakeDaemon.Script.allCases)
    func hostileDaemon(_ script: FakeDaemon.Script) async throws {
        let home = try TemporaryDirectory("touchgate-fake")
        defer { home.remove() }
        // A released value, and the reports the front decodes itself (an empty one included).
        for arguments in [["secret", "get", "api", "--json"], ["status", "--json"], ["secret", "list", "--json"]] {
            let fake = try FakeDaemon(path: home.path("socket"), script: script)
            defer { fake.stop() }
            var client = CLIProcess(environment: ["HOME": home.path("home"), "TOUCHGATE_SOCKET": home.path("socket")])
            client.binaryOverride = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().path + "/touchgate"
            let result = try await client.run(arguments, timeout: 20)
            #expect(result.status == script.expectedStatus, "\(script) \(arguments): \(result.stdout) \(result.stderrLines)")
            let error = result.json?["error"] as? String
            #expect(error == script.expectedError, "\(script) \(arguments): \(result.stdout)")
            #expect((result.json?["message"] as? String)?.isEmpty == false, "\(script): every failure says what happened")
            #expect(!result.stdout.contains("SECRET") && !result.stderrLines.joined().contains("SECRET"))
            try? FileManager.default.removeItem(atPath: home.path("socket"))
        }
    }
}

/// A socket that plays touchgated badly: it greets, reads the request and answers with
/// one of ``Script``'s hostile replies.
final class FakeDaemon: @unchecked Sendable {
    // @unchecked Sendable: `listener` is fixed at init; the thread only reads it.
    enum Script: String, CaseIterable, Sendable {
        case notJSON, oversizedLine, deepNesting, unknownKind, secondHello, resultWithoutValue, closedInsideSecret
        case secretLongerThanAllowed, unknownErrorCode, closedAtOnce

        var reply: [UInt8] {
            switch self {
            case .notJSON: Array("this is not json\n".utf8)
            case .oversizedLine: Array(repeating: UInt8(ascii: "x"), count: 70 * 1024) + [0x0A]
            case .deepNesting: Array((String(repeating: "[", count: 5000) + "\n").utf8)
            case .unknownKind: Array("{\"id\":1,\"kind\":\"surprise\"}\n".utf8)
            case .secondHello: Array("{\"id\":0,\"kind\":\"hello\",\"versions\":[1]}\n".utf8)
            case .resultWithoutValue: Array("{\"id\":1,\"kind\":\"result\",\"result\":{}}\n".utf8)
            case .closedInsideSecret: Array("{\"id\":1,\"kind\":\"result\",\"result\":{},\"secret-length\":100}\nSECRET".utf8)
            case .secretLongerThanAllowed:
                Array("{\"id\":1,\"kind\":\"result\",\"result\":{},\"secret-length\":99999999}\nSECRET".utf8)
            case .unknownErrorCode:
                Array("{\"error\":{\"code\":\"SECRET\",\"message\":\"m\"},\"id\":1,\"kind\":\"failure\"}\n".utf8)
            case .closedAtOnce: []
            }
        }

        var expectedStatus: Int32 { 75 }
        var expectedError: String { "daemon-unavailable" }
    }

    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)

    init(path: String, script: Script) throws {
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: path.utf8) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        let done = self.done
        Thread.detachNewThread {
            defer { done.signal() }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            let hello = Array("{\"id\":0,\"kind\":\"hello\",\"versions\":[1]}\n".utf8)
            _ = hello.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // The request, up to its newline.
            var byte: UInt8 = 0
            while read(client, &byte, 1) == 1, byte != 0x0A {}
            let reply = script.reply
            _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        _ = done.wait(timeout: .now() + 5)
    }
}
