import Foundation
import Testing
import TouchgateSocket
import TouchgateTestSupport
import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// The same user as ``DaemonRig/client(as:)`` (same HOME and XDG_DATA_HOME) in the personal
/// mode (`TOUCHGATE_SOCKET=` with nothing), with a virtual reader of its own.
struct PersonalSide {
    let rig: DaemonRig
    let finger: VirtualImageFinger
    /// More environment for the personal side's commands (`TOUCHGATE_TPM_TCTI`, say).
    var environment: [String: String] = [:]

    init(_ rig: DaemonRig) {
        self.rig = rig
        finger = VirtualImageFinger(socketPath: rig.home.path("personal-image.socket"))
    }

    /// The personal data directory.
    var store: String { rig.home.path("client/data/touchgate") }

    /// Runs `touchgate arguments` in the personal mode.
    func run(_ arguments: [String], presenting prints: [String] = [], stdin: Data? = nil) async throws -> CLIResult {
        var process = rig.client()
        process.environment["TOUCHGATE_SOCKET"] = ""
        process.environment["FP_VIRTUAL_IMAGE"] = finger.socketPath
        process.environment["FP_DRIVERS_WHITELIST"] = "virtual_image"
        process.environment.merge(environment) { $1 }
        finger.present(prints)
        let finger = self.finger
        return try await process.run(arguments, stdin: stdin) { line, _ in finger.handle(line) }
    }

    /// A personal vault as made before touchgated was installed: whorl enrolled, a vault,
    /// a secret any enrolled finger opens, one bound to the current fingers, and a touch.
    func makeVault() async throws {
        let enrolled = try await run(["enroll", "--json", "--finger", "right-index"], presenting: ["whorl"])
        try #require(enrolled.status == 0, "enroll: \(enrolled.stderrLines)")
        let made = try await run(["init", "--kdf", "minimum", "--passphrase-fd", "0"],
                                 stdin: Data((DaemonRig.passphrase + "\n").utf8))
        try #require(made.status == 0, "init: \(made.stderrLines)")
        for (name, policy, value) in [("api", "biometry-any", "token-123"), ("bound", "biometry-current-set", "s3cret")] {
            let added = try await run(["secret", "add", name, "--policy", policy], stdin: Data((value + "\n").utf8))
            try #require(added.status == 0, "secret add \(name): \(added.stderrLines)")
        }
        let verified = try await run(["verify", "--json"], presenting: ["whorl"])
        try #require(verified.status == 0, "verify: \(verified.stderrLines)")
    }

    /// `audit export` in the personal mode, required to succeed.
    func auditTrail() async throws -> [[String: Any]] {
        try Self.records(try await run(["audit", "export"]))
    }

    /// The records of an `audit export` run.
    static func records(_ export: CLIResult) throws -> [[String: Any]] {
        try VaultRig.exportedRecords(export)
    }

    /// The personal store is whole and as it was: its trail verifies and ends where `trail` ends.
    func expectUnchanged(since trail: [[String: Any]], _ what: String) async throws {
        let verified = try await run(["audit", "verify", "--json"])
        #expect(verified.status == 0, "\(what): the personal trail no longer verifies: \(verified.stdout)")
        let now = try await auditTrail()
        #expect(now.count == trail.count && now.last?["mac"] as? String == trail.last?["mac"] as? String,
                "\(what): the personal trail changed (\(trail.count) → \(now.count) records)")
        let list = try await run(["secret", "list", "--json"])
        #expect(list.stdout.contains("\"api\"") && list.stdout.contains("\"bound\""), "\(what): \(list.stdout)")
    }
}

extension DaemonRig {
    /// The daemon's store for the test's own uid.
    var ownStore: String { stateDirectory + "/users/\(getuid())" }

    /// Staging directories of a move still present in the daemon's state directory.
    var stagedCopies: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: stateDirectory + "/users")) ?? [])
            .filter { $0.hasPrefix(".migrating-\(getuid())-") || $0.hasPrefix(".replaced-\(getuid())-") }
    }

    /// Waits (up to 10 s) until the daemon has cleared away a cancelled move.
    func waitForNoStagedCopies() async throws {
        for _ in 0..<100 where !stagedCopies.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
    }
}

/// `touchgate migrate`: the personal store moves into touchgated whole (secrets, prints,
/// authenticated state and the audit chain, continued), and the personal copy goes only
/// once the moved one verifies through the daemon; anything that fails before leaves both
/// sides as they were.
@Suite("touchgate migrate", .serialized)
struct MigrateTests {
    @Test("secrets, prints and the audit trail move; secrets open with the finger, the chain continues, the personal files go")
    func movesEverything() async throws {
        let rig = try await DaemonRig()
        let personal = PersonalSide(rig)
        try await personal.makeVault()
        let before = try await personal.auditTrail()
        try await rig.start()

        // Before the move, status through the daemon names the step: migrate, not init.
        let waiting = try await rig.run(["status"])
        #expect(waiting.status == 0, "\(waiting.stderrLines)")
        #expect(waiting.stdout.contains("move it in with touchgate migrate") && waiting.stdout.contains(personal.store),
                "\(waiting.stdout)")
        #expect(!waiting.stdout.contains("touchgate init"), "\(waiting.stdout)")
        // And so does a command the daemon refuses for want of a vault, through the front's own
        // conversation and through touchgate-client alike, in words and in JSON.
        for program in ["touchgate", "touchgate-client"] {
            var client = rig.client()
            client.binaryOverride = rig.binDirectory + "/" + program
            let listed = try await client.run(["secret", "list"])
            #expect(listed.status == 10, "\(program): \(listed.stderrLines)")
            #expect(listed.stderrLines.joined().contains("move it in with touchgate migrate")
                    && !listed.stderrLines.joined().contains("touchgate init"), "\(program): \(listed.stderrLines)")
            let json = try await client.run(["secret", "list", "--json"])
            #expect(json.json?["error"] as? String == "no-vault"
                    && (json.json?["message"] as? String)?.contains("touchgate migrate") == true, "\(program): \(json.stdout)")
        }

        let moved = try await rig.withPassphrase(["migrate", "--json"])
        #expect(moved.status == 0, "migrate: \(moved.stderrLines)\n\(rig.daemonLog)")
        #expect(moved.json?["items"] as? Int == 2 && moved.json?["prints"] as? Int == 1, "\(moved.stdout)")
        #expect(moved.json?["removed"] as? Bool == true, "\(moved.stdout)")
        for name in ["touchgate.sqlite", "touchgate.sqlite-wal", "touchgate.sqlite-shm", "audit.key", "audit-sign.key",
                     "migrate.lock"] {
            #expect(!FileManager.default.fileExists(atPath: personal.store + "/" + name), "\(name) is still in the personal store")
        }
        #expect(rig.stagedCopies.isEmpty, "\(rig.stagedCopies)")

        // Through the daemon: unlocked by the move's passphrase, the finger opens both secrets
        // (the enrollment generation came along, so the bound one is still valid).
        let status = try await rig.run(["status", "--json"])
        #expect(status.json?["locked"] as? Bool == false, "\(status.stdout)")
        let api = try await rig.run(["secret", "get", "api", "--json"], presenting: ["whorl"])
        #expect(api.status == 0 && api.json?["value"] as? String == "token-123", "\(api.stderrLines)\n\(rig.daemonLog)")
        let bound = try await rig.run(["secret", "get", "bound", "--json"], presenting: ["whorl"])
        #expect(bound.status == 0 && bound.json?["value"] as? String == "s3cret", "\(bound.stderrLines)")
        let verify = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(verify.status == 0, "\(verify.stderrLines)")
        let wrongFinger = try await rig.run(["verify", "--json"], presenting: ["arch"])
        #expect(wrongFinger.status == 1, "\(wrongFinger.stderrLines)")
        let prints = try await rig.run(["prints", "list", "--json"])
        #expect(prints.stdout.contains("right-index"), "\(prints.stdout)")

        // The chain: the personal records unchanged, then the migration record linked to the last of them.
        let audit = try await rig.run(["audit", "verify", "--json"])
        #expect(audit.status == 0, "\(audit.stdout) \(audit.stderrLines)")
        let after = try PersonalSide.records(try await rig.run(["audit", "export"]))
        try #require(after.count > before.count)
        for (old, new) in zip(before, after) {
            #expect(old["mac"] as? String == new["mac"] as? String && old["seq"] as? Int == new["seq"] as? Int)
        }
        let migration = after[before.count]
        #expect(migration["event"] as? String == "vault.migrate", "\(migration)")
        #expect(migration["prev-mac"] as? String == before.last?["mac"] as? String)
        #expect(migration["seq"] as? Int == (before.last?["seq"] as? Int).map { $0 + 1 })
        #expect((migration["reason"] as? String)?.contains(personal.store) == true, "\(migration)")
        #expect((migration["reason"] as? String)?.contains("2 secrets, 1 print") == true, "counted in words: \(migration)")
        // The daemon's own key signs the moved trail from the migration on (the user held the old one).
        #expect((migration["reason"] as? String)?.contains("the trail is now signed by key") == true, "\(migration)")
        #expect((migration["reason"] as? String)?.contains("touchgate") == true, "the peer's executable: \(migration)")
    }

    @Test("a wrong passphrase changes neither side")
    func wrongPassphrase() async throws {
        let rig = try await DaemonRig()
        let personal = PersonalSide(rig)
        try await personal.makeVault()
        let before = try await personal.auditTrail()
        try await rig.start()

        let refused = try await rig.run(["migrate", "--json", "--passphrase-fd", "0"], stdin: Data("not it\n".utf8))
        #expect(refused.status == 8, "\(refused.stderrLines)\n\(rig.daemonLog)")
        #expect(refused.stderrLines.joined().contains("unchanged"), "\(refused.stderrLines)")
        try await rig.waitForNoStagedCopies()
        #expect(rig.stagedCopies.isEmpty, "\(rig.stagedCopies)")
        #expect(!FileManager.default.fileExists(atPath: rig.ownStore + "/touchgate.sqlite"))
        try await personal.expectUnchanged(since: before, "after a wrong passphrase")
        let list = try await rig.run(["secret", "list", "--json"])
        #expect(list.status == 10, "the daemon has no vault for the user: \(list.stdout)")
    }

    @Test("kill -9 of the client mid-migrate leaves the personal store whole and nothing in the daemon; a retry succeeds")
    func clientKilled() async throws {
        let rig = try await DaemonRig()
        let personal = PersonalSide(rig)
        try await personal.makeVault()
        let before = try await personal.auditTrail()
        try await rig.start()

        // The passphrase descriptor is a FIFO nobody writes to: the client waits on it with
        // the daemon's copy staged, and is killed there.
        let fifo = rig.home.path("passphrase.fifo")
        try #require(mkfifo(fifo, 0o600) == 0)
        let writer = open(fifo, O_RDWR)
        defer { close(writer) }
        var process = rig.client()
        process.wrapper = ["/bin/sh", "-c", "exec \"$@\" <\"$0\"", fifo]
        let killed = try await process.run(["migrate", "--json", "--passphrase-fd", "0"]) { line, child in
            if line.contains("\"passphrase-needed\"") { kill(child.processIdentifier, SIGKILL) }
        }
        #expect(killed.status == 128 + SIGKILL, "\(killed.stderrLines)\n\(rig.daemonLog)")
        try await rig.waitForNoStagedCopies()
        #expect(rig.stagedCopies.isEmpty, "the daemon kept a half-made copy: \(rig.stagedCopies)")
        #expect(!FileManager.default.fileExists(atPath: rig.ownStore + "/touchgate.sqlite"))
        try await personal.expectUnchanged(since: before, "after the client was killed")

        let retried = try await rig.withPassphrase(["migrate", "--json"])
        #expect(retried.status == 0, "\(retried.stderrLines)\n\(rig.daemonLog)")
        let api = try await rig.run(["secret", "get", "api", "--json"], presenting: ["whorl"])
        #expect(api.json?["value"] as? String == "token-123", "\(api.stderrLines)")
    }

    @Test("kill -9 of the daemon mid-migrate: the client says so (exit 75), nothing half-made is taken for a vault, a retry succeeds")
    func daemonKilled() async throws {
        let rig = try await DaemonRig()
        let personal = PersonalSide(rig)
        try await personal.makeVault()
        let before = try await personal.auditTrail()
        try await rig.start()

        let fifo = rig.home.path("passphrase.fifo")
        try #require(mkfifo(fifo, 0o600) == 0)
        let writer = open(fifo, O_RDWR)
        defer { close(writer) }
        var process = rig.client()
        process.wrapper = ["/bin/sh", "-c", "exec \"$@\" <\"$0\"", fifo]
        let cut = try await process.run(["migrate", "--json", "--passphrase-fd", "0"]) { line, _ in
            guard line.contains("\"passphrase-needed\"") else { return }
            // The daemon dies holding its staged copy; then the client gets its passphrase.
            rig.stop(signal: SIGKILL)
            _ = (DaemonRig.passphrase + "\n").withCString { write(writer, $0, strlen($0)) }
        }
        #expect(cut.status == 75, "\(cut.stderrLines)")
        #expect(cut.stderrLines.joined().contains("unchanged"), "\(cut.stderrLines)")
        try await personal.expectUnchanged(since: before, "after the daemon was killed")

        try await rig.start()
        #expect(!FileManager.default.fileExists(atPath: rig.ownStore + "/touchgate.sqlite"),
                "a half-made copy became the user's store")
        let list = try await rig.run(["secret", "list", "--json"])
        #expect(list.status == 10, "\(list.stdout)")
        let retried = try await rig.withPassphrase(["migrate", "--json"])
        #expect(retried.status == 0, "\(retried.stderrLines)\n\(rig.daemonLog)")
        #expect(rig.stagedCopies.isEmpty, "the abandoned copy was not cleared away: \(rig.stagedCopies)")
        let audit = try await rig.run(["audit", "verify", "--json"])
        #expect(audit.status == 0, "\(audit.stdout)")
    }

    @Test("descriptors with any other request, too few of them, or files that are not a store's are refused")
    func hostileDescriptors() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        let null = open("/dev/null", O_RDONLY)
        defer { close(null) }
        func exchange(_ operation: DaemonOperation, announce: Int, send: [Int32]) async throws -> DaemonMessage? {
            let socket = try FramedSocket.connect(path: rig.socketPath)
            let request = RequestMessage(id: 1, operation: operation,
                                         arguments: MergedArguments(common: RequestArguments(),
                                                                    own: Operations.Migrate.Arguments(path: "/nowhere")),
                                         descriptors: announce)
            #expect(socket.send(request, descriptors: send))
            var last: DaemonMessage?
            for try await frame in socket.frames() {
                last = try frame.decode(DaemonMessage.self)
                if last?.kind == .failure || last?.kind == .result { break }
            }
            socket.close()
            return last
        }
        let status = try await exchange(.status, announce: 1, send: [null])
        #expect(status?.kind == .failure && status?.error?.code == .usage, "\(String(describing: status))")
        let short = try await exchange(.migrate, announce: 2, send: [null])
        #expect(short?.kind == .failure && short?.error?.code == .usage, "\(String(describing: short))")
        let device = try await exchange(.migrate, announce: 2, send: [null, null])
        #expect(device?.kind == .failure, "\(String(describing: device))")
        #expect(device?.error?.message.contains("not a regular file") == true, "\(String(describing: device))")
        try await rig.waitForNoStagedCopies()
        #expect(rig.stagedCopies.isEmpty, "\(rig.stagedCopies)")
        #expect(!FileManager.default.fileExists(atPath: rig.ownStore + "/touchgate.sqlite"))
        let alive = try await rig.run(["status", "--json"])
        #expect(alive.status == 0 && !rig.daemonLog.contains("fatal signal"), "\(rig.daemonLog)")
    }

    @Test("refused when touchgated already holds a vault for the user; the personal store stays")
    func refusedBesideAnExistingVault() async throws {
        let rig = try await DaemonRig()
        let personal = PersonalSide(rig)
        try await personal.makeVault()
        let before = try await personal.auditTrail()
        try await rig.start()
        try await rig.initialize()

        let refused = try await rig.withPassphrase(["migrate", "--json"])
        #expect(refused.status == 9, "\(refused.stderrLines)\n\(rig.daemonLog)")
        #expect(refused.errorCode == "already-initialized", "\(refused.stdout)")
        try await personal.expectUnchanged(since: before, "after the refusal")
        let list = try await rig.run(["secret", "list", "--json"])
        #expect(!list.stdout.contains("\"api\""), "the daemon's own vault was changed: \(list.stdout)")
    }

    @Test("no personal vault is exit 10, no daemon is exit 75, a tampered personal store is refused (exit 6)")
    func nothingToMoveNowhereToGoOrTampered() async throws {
        let rig = try await DaemonRig()
        let personal = PersonalSide(rig)
        try await rig.start()
        let nothing = try await rig.withPassphrase(["migrate", "--json"])
        #expect(nothing.status == 10, "\(nothing.stderrLines)")
        #expect(!FileManager.default.fileExists(atPath: personal.store + "/touchgate.sqlite"),
                "looking for the personal store created one")

        rig.stop()
        try await personal.makeVault()
        let noDaemon = try await personal.run(["migrate", "--json", "--passphrase-fd", "0"],
                                              stdin: Data((DaemonRig.passphrase + "\n").utf8))
        #expect(noDaemon.status == 75, "\(noDaemon.stderrLines)")
        #expect(noDaemon.stderrLines.joined().contains("touchgated"), "\(noDaemon.stderrLines)")

        // The lockout threshold edited with sqlite3: the state no longer matches the audit head.
        let tool = "/usr/bin/sqlite3"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "this test needs sqlite3: apt-get install sqlite3")
        let edit = try await runProgram(tool, [personal.store + "/touchgate.sqlite",
                                               "INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('planted', 'x', 0)"])
        try #require(edit.status == 0, "\(edit.stderr)")
        try await rig.start()
        let tampered = try await rig.withPassphrase(["migrate", "--json"])
        #expect(tampered.status == 6, "\(tampered.stderrLines)\n\(rig.daemonLog)")
        #expect(tampered.stderrLines.joined().contains("does not verify"), "\(tampered.stderrLines)")
        #expect(FileManager.default.fileExists(atPath: personal.store + "/touchgate.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: rig.ownStore + "/touchgate.sqlite"))
        try await rig.waitForNoStagedCopies()
        #expect(rig.stagedCopies.isEmpty, "\(rig.stagedCopies)")
    }
}
