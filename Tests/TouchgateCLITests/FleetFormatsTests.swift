import Foundation
import Testing
import TouchgatePolicy
import TouchgateTestSupport
import TouchgateShipping
import TouchgateVault

/// The fleet log in shared formats (docs/FLEET.md): checked by a verifier that shares no
/// code with the collector, a fork refused under a witness quorum, and no proof for an
/// entry that is not there. Each against a real PostgreSQL server.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct FleetFormatsTests {
    typealias Machine = FleetTests.Machine

    static func collector(_ server: PostgresRig, _ arguments: [String]) async throws -> CLIResult {
        try await FleetTests.collector(server, arguments)
    }

    /// The independent verifier: written in Python from the C2SP and RFC 9162 texts alone.
    static let verifier = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/fleet/tlogcheck.py").path
    /// An independent tlog-witness, written in Python from the C2SP texts alone.
    static let witnessProgram = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/fleet/tlogwitness.py").path

    static func python(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try await runProgram("/usr/bin/python3", [verifier] + arguments)
        if result.stderr.contains("No module named 'cryptography'") {
            Issue.record("the independent verifier needs python3-cryptography (apt-get install python3-cryptography)")
        }
        return result
    }

    /// A note key of the collector (a log key, or a witness's with `witness`).
    /// The port a server started by the test writes to `file` once it listens (5 s at most).
    static func port(written file: String, by server: String) async throws -> String {
        var port = ""
        for _ in 0..<100 where port.isEmpty {
            port = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if port.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        try #require(!port.isEmpty, "\(server) did not start")
        return port
    }

    static func key(_ server: PostgresRig, _ name: String, witness: Bool = false) async throws -> (key: String, pub: String) {
        let key = server.directory + "/\(name).key"
        let made = try await collector(server, ["keygen"] + (witness ? ["--witness"] : []) + ["--name", name, "--out", key])
        try #require(made.status == 0, "\(made.stderrLines)")
        return (key, key + ".pub")
    }

    static func vkey(_ file: String) throws -> String {
        try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("the log as C2SP tiles, its checkpoint signed by the log's key and cosigned by two witnesses, passes a verifier written from the C2SP and RFC 9162 texts alone (which also passes C2SP's own published vectors); a flipped byte in an entry, a tile or a cosignature fails it")
    func independentVerifierReadsTheTiles() async throws {
        let vectors = try await Self.python(["vectors"])
        #expect(vectors.status == 0 && vectors.stdout.contains("passed"), "\(vectors.stdout) \(vectors.stderr)")

        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 270, batchSize: 1)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            #expect(try await machines[0].ship().status == 0)
            let log = try await Self.key(server, "log.fleet.test")
            let (w1, w2) = (try await Self.key(server, "w1.fleet.test", witness: true),
                            try await Self.key(server, "w2.fleet.test", witness: true))
            let tiles = server.directory + "/tiles"
            let first = try await Self.collector(server, ["publish", "--key", log.key, "--tiles", tiles])
            #expect(first.status == 0 && first.stdout.contains("signed the fleet log at 272 entries"), "\(first.stdout) \(first.stderrLines)")
            let old = server.directory + "/old.checkpoint"
            try FileManager.default.copyItem(atPath: tiles + "/checkpoint", toPath: old)
            #expect(FileManager.default.fileExists(atPath: tiles + "/tile/0/000"))
            #expect(FileManager.default.fileExists(atPath: tiles + "/tile/0/001.p/16"))
            #expect(FileManager.default.fileExists(atPath: tiles + "/tile/entries/001.p/16"))
            #expect(FileManager.default.fileExists(atPath: tiles + "/tile/1/000.p/1"))

            #expect(try await machines[1].ship().status == 0)
            for witness in [w1, w2] {
                let cosigned = try await Self.collector(server, ["witness", "--key", witness.key, "--state", witness.key + ".state"])
                #expect(cosigned.status == 0, "\(cosigned.stdout) \(cosigned.stderrLines)")
            }
            let second = try await Self.collector(server, ["publish", "--key", log.key, "--tiles", tiles])
            #expect(second.status == 0 && second.stdout.contains("signed the fleet log at 542 entries"), "\(second.stdout) \(second.stderrLines)")
            let checkpoint = try String(contentsOfFile: tiles + "/checkpoint", encoding: .utf8)
            #expect(checkpoint.components(separatedBy: "\n\u{2014} ").count == 4, "\(checkpoint)")

            let arguments = ["check", "--tiles", tiles, "--log-key", try Self.vkey(log.pub), "--witness-key", try Self.vkey(w1.pub),
                             "--witness-key", try Self.vkey(w2.pub), "--quorum", "2", "--old-checkpoint", old, "--json"]
            let checked = try await Self.python(arguments)
            #expect(checked.status == 0, "\(checked.stdout) \(checked.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(checked.stdout.utf8)) as? [String: Any],
                                      "\(checked.stdout)")
            #expect(report["size"] as? Int == 542 && report["entries"] as? Int == 542)
            #expect(Set(report["cosigned_by"] as? [String] ?? []) == ["w1.fleet.test", "w2.fleet.test"])
            #expect(report["consistency_checked"] as? Int == 1 && (report["inclusion_checked"] as? Int ?? 0) >= 542)
            // The collector's own verify agrees, with the log's key and the quorum.
            let verified = try await Self.collector(server, ["verify", "--log-key", log.pub, "--witness-key", w1.pub,
                                                             "--witness-key", w2.pub, "--witness-quorum", "2"])
            #expect(verified.status == 0 && verified.stdout.contains("quorum of 2 witnesses: through 542 of 542")
                    && verified.stdout.contains("2 checkpoint(s) signed by the log's key"), "\(verified.stdout)")

            // Each of these, changed by one byte, fails the independent check.
            for (path, reason) in [("tile/entries/001", "leaf hash"), ("tile/0/000", "tile"), ("checkpoint", "cosignature")] {
                let file = tiles + "/" + path
                let original = try Data(contentsOf: URL(fileURLWithPath: file))
                var bytes = [UInt8](original)
                let at = path == "checkpoint" ? bytes.count - 10 : 40
                bytes[at] = bytes[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                try Data(bytes).write(to: URL(fileURLWithPath: file))
                let tampered = try await Self.python(arguments)
                #expect(tampered.status == 1 && tampered.stderr.contains(reason), "\(path): \(tampered.stderr)")
                try original.write(to: URL(fileURLWithPath: file))
            }
        }
    }

    @Test("a fork: the administrator rolls the log back and lets another machine ship on a branch of its own; one witness saw each branch. Without a quorum verify passes (today's attack); with a quorum of two it fails, and the witness of the first branch refuses the second")
    func forkFailsUnderAQuorum() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 10)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            for machine in machines { #expect(try await machine.ship().status == 0) }
            let (w1, w2) = (try await Self.key(server, "w1.fleet.test", witness: true),
                            try await Self.key(server, "w2.fleet.test", witness: true))
            let common = try await server.psql("SELECT count(*) FROM log_entries")
            // Branch A: m1 ships on; w1 sees it.
            try machines[0].write(5)
            #expect(try await machines[0].ship().status == 0)
            #expect(try await Self.collector(server, ["witness", "--key", w1.key, "--state", w1.key + ".state"]).status == 0)
            // Branch B: the administrator cuts A off (and w1's cosignature with it), m2 ships on,
            // and a witness of its choosing, w2, cosigns it.
            try await FleetTransparencyTests.rollBack(server, to: Int(common)!)
            try await server.psql("DELETE FROM cosignatures")
            try machines[1].write(5)
            #expect(try await machines[1].ship().status == 0)
            #expect(try await Self.collector(server, ["witness", "--key", w2.key, "--state", w2.key + ".state"]).status == 0)

            let alone = try await Self.collector(server, ["verify", "--witness-key", w1.pub, "--witness-key", w2.pub,
                                                          "--machine", "m2"])
            #expect(alone.status == 0, "without a quorum the branch passes: \(alone.stdout)")
            let quorum = try await Self.collector(server, ["verify", "--witness-key", w1.pub, "--witness-key", w2.pub,
                                                           "--witness-quorum", "2", "--machine", "m2"])
            #expect(quorum.status == 6 && quorum.stdout.contains("fleet log broken")
                    && quorum.stdout.contains("is not cosigned by 2 of the witnesses given")
                    && quorum.stdout.contains("quorum of 2 witnesses: not met"), "\(quorum.stdout)")
            let refused = try await Self.collector(server, ["witness", "--key", w1.key, "--state", w1.key + ".state"])
            #expect(refused.status == 6 && refused.stderrLines.joined().contains("does not extend"), "\(refused.stderrLines)")
            let bad = try await Self.collector(server, ["verify", "--witness-key", w1.pub, "--witness-quorum", "2"])
            #expect(bad.status == 64, "\(bad.stderrLines)")
        }
    }

    @Test("an entry deleted with its nodes kept has no proof (exit 6, not an empty entry); an entry past the end is not found; the next append, the log's key and the witnesses refuse to build on or sign the damaged log")
    func deletedEntryHasNoProof() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1"], records: 10)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            #expect(try await machines[0].ship().status == 0)
            let log = try await Self.key(server, "log.fleet.test")
            let proof = try await Self.collector(server, ["proof", "--leaf", "2"])
            #expect(proof.status == 0 && (proof.json?["entry"] as? String)?.hasPrefix("touchgate.fleet/batch/v1") == true,
                    "\(proof.stdout)")
            try await server.psql("DELETE FROM log_entries WHERE leaf = 2")
            let missing = try await Self.collector(server, ["proof", "--leaf", "2"])
            #expect(missing.status == 6 && missing.stderrLines.joined().contains("entry 2 is missing"), "\(missing.stdout) \(missing.stderrLines)")
            let past = try await Self.collector(server, ["proof", "--leaf", "99"])
            #expect(past.status == 10 && past.stderrLines.joined().contains("there is no entry 99"), "\(past.stderrLines)")
            try machines[0].write(5)
            let appended = try await machines[0].ship()
            // The newest entry deleted: the next append refuses to build on it, as a damaged log.
            #expect(appended.status == 6 && appended.stdout.contains("log damaged")
                    && appended.stdout.contains("a leaf at 2 without its entry"), "\(appended.stdout)")
            let signed = try await Self.collector(server, ["publish", "--key", log.key])
            #expect(signed.status == 6 && signed.stderrLines.joined().contains("not signed"), "\(signed.stderrLines)")
            let witness = try await Self.key(server, "w1.fleet.test", witness: true)
            let cosigned = try await Self.collector(server, ["witness", "--key", witness.key, "--state", witness.key + ".state"])
            #expect(cosigned.status == 6 && cosigned.stderrLines.joined().contains("entry 2 is missing"), "\(cosigned.stderrLines)")
        }
    }

    @Test("tlog-witness: publish asks a witness written from the C2SP texts alone to cosign by add-checkpoint, from the size it cosigned last; verify and the independent verifier accept its cosignature under a quorum; after the administrator forks the log, the witness refuses (exit 6)")
    func witnessProtocol() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 10)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            for machine in machines { #expect(try await machine.ship().status == 0) }
            let log = try await Self.key(server, "log.fleet.test")
            let witnessKey = server.directory + "/independent.key"
            let made = try await runProgram("/usr/bin/python3", [Self.witnessProgram, "keygen", "--name", "independent.witness.test",
                                                                 "--out", witnessKey])
            try #require(made.status == 0, "\(made.stderr)")
            let origin = try #require(try await Self.collector(server, ["checkpoint"]).stdout.split(separator: "\n").first)
            let portFile = server.directory + "/witness.port"
            let witness = try await BackgroundProcess.start(
                "/usr/bin/python3", [Self.witnessProgram, "serve", "--key", witnessKey, "--log", "\(origin)=\(try Self.vkey(log.pub))",
                                     "--state", server.directory + "/witness-state", "--listen", "127.0.0.1:0", "--port-file", portFile],
                environment: ProcessInfo.processInfo.environment)
            defer { witness.stop(signal: SIGTERM) }
            let port = try await Self.port(written: portFile, by: "the witness")
            let url = "http://127.0.0.1:\(port)"
            let tiles = server.directory + "/tiles"
            let publish = ["publish", "--key", log.key, "--tiles", tiles, "--witness", url, "--witness-key", witnessKey + ".pub"]
            let first = try await Self.collector(server, publish)
            #expect(first.status == 0 && first.stdout.contains("witness independent.witness.test cosigned it"),
                    "\(first.stdout) \(first.stderrLines)")
            try machines[0].write(10)
            #expect(try await machines[0].ship().status == 0)
            let second = try await Self.collector(server, publish)
            #expect(second.status == 0 && second.stdout.contains("cosigned it"), "\(second.stdout) \(second.stderrLines)")
            let verified = try await Self.collector(server, ["verify", "--log-key", log.pub, "--witness-key", witnessKey + ".pub",
                                                             "--witness-quorum", "1"])
            #expect(verified.status == 0 && verified.stdout.contains("quorum of 1 witnesses: through"), "\(verified.stdout)")
            let checked = try await Self.python(["check", "--tiles", tiles, "--log-key", try Self.vkey(log.pub),
                                                 "--witness-key", try Self.vkey(witnessKey + ".pub"), "--quorum", "1"])
            #expect(checked.status == 0, "\(checked.stdout) \(checked.stderr)")

            // The administrator forks: m1's last shipment cut off with its cosignatures, m2
            // ships on. The witness, which saw the other branch, refuses to cosign it.
            let common = try await server.psql("SELECT count(*) FROM log_entries WHERE kind <> 'batch' OR last_seq <= 10")
            try await FleetTransparencyTests.rollBack(server, to: Int(common)!)
            try await server.psql("DELETE FROM cosignatures; DELETE FROM checkpoints WHERE size > \(common)")
            try machines[1].write(20)
            #expect(try await machines[1].ship().status == 0)
            let forked = try await Self.collector(server, publish)
            #expect(forked.status == 6 && forked.stdout.contains("did not cosign") && forked.stdout.contains("HTTP 422"),
                    "\(forked.stdout) \(forked.stderrLines)")
        }
    }

    @Test("a witness that answers a byte at a time holds publish no longer than --witness-timeout, whole: it counts as out of reach (69), and the log's checkpoint is signed all the same")
    func slowWitnessHasADeadline() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1"], records: 5)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            #expect(try await machines[0].ship().status == 0)
            let log = try await Self.key(server, "log.fleet.test")
            let witness = try await FleetTransparencyTests.witness(server, "w1")
            // Reads the request, then sends an HTTP answer's first bytes, one every half second.
            let portFile = server.directory + "/drip.port"
            let drip = try await BackgroundProcess.start("/usr/bin/python3", ["-c", """
                import socket, sys, time
                s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
                open(sys.argv[1], "w").write(str(s.getsockname()[1]))
                while True:
                    c, _ = s.accept(); c.recv(65536)
                    for b in b"HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\n" * 1000:
                        c.send(bytes([b])); time.sleep(0.5)
                """, portFile], environment: ProcessInfo.processInfo.environment)
            defer { drip.stop(signal: SIGKILL) }
            let port = try await Self.port(written: portFile, by: "the dripping witness")
            let started = Date()
            let published = try await Self.collector(server, ["publish", "--key", log.key, "--witness", "http://127.0.0.1:\(port)",
                                                              "--witness-key", witness.pub, "--witness-timeout", "3"])
            let took = Date().timeIntervalSince(started)
            #expect(published.status == 69 && published.stdout.contains("no whole answer within 3 s"),
                    "\(published.stdout) \(published.stderrLines)")
            #expect(took < 15, "publish took \(took) s against a 3 s witness timeout")
            #expect(published.stdout.contains("signed the fleet log at"), "\(published.stdout)")
            let bad = try await Self.collector(server, ["publish", "--key", log.key, "--witness-timeout", "0"])
            #expect(bad.status == 64 && bad.stderrLines.joined().contains("--witness-timeout takes 1 to 3600 seconds"),
                    "\(bad.stderrLines)")
        }
    }

    @Test("retention: records are kept a partition a month; a query by machine and month reads that month; archive takes the months before a floor out into files (nothing of a month not yet in the log), verify takes each trail up after its archive and verify --archive checks the files; records deleted and called archived, or an archive file changed, are caught")
    func monthsArchiveAndVerify() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            #expect(try await Self.collector(server, ["init"]).status == 0)
            // Thirty records three days apart: January to March 2026.
            let machine = try Machine("m1", database: server.database, minutesBetweenRecords: 3 * 24 * 60)
            defer { machine.remove() }
            try machine.write(30)
            try await FleetTests.register(server, machine: "m1", publicKeyFile: machine.publicKeyFile)
            let shipped = try await machine.ship()
            #expect(shipped.status == 0, "\(shipped.stdout)")
            #expect(try await Self.collector(server, ["init"]).status == 0, "init again makes the months held")
            let partitions = try await server.psql("""
                SELECT string_agg(c.relname || ':' || (SELECT count(*) FROM records r WHERE r.tableoid = c.oid), ' ' ORDER BY c.relname)
                FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'records'::regclass
                  AND c.relname LIKE 'records_2026_0%'
                """)
            #expect(partitions.hasPrefix("records_2026_01:11 records_2026_02:9 records_2026_03:10 "), "\(partitions)")
            let february = try await Self.collector(server, ["query", "--machine", "m1", "--since", "2026-02-01",
                                                             "--until", "2026-03-01", "--json"])
            #expect(february.status == 0 && february.stdout.split(separator: "\n").count == 9, "\(february.stdout)")
            let plan = try await server.psql("""
                EXPLAIN SELECT * FROM records WHERE machine = 'm1' AND unix_time >= 1769904000 AND unix_time < 1772323200
                """)
            #expect(plan.contains("records_2026_02") && !plan.contains("records_2026_01") && !plan.contains("records_other"), "\(plan)")

            let archives = server.directory + "/archives"
            try FileManager.default.createDirectory(atPath: archives, withIntermediateDirectories: true)
            let archived = try await Self.collector(server, ["archive", "--before", "2026-03", "--out", archives])
            #expect(archived.status == 0 && archived.stdout.contains("archived 2026-01: 11 records")
                    && archived.stdout.contains("archived 2026-02: 9 records"), "\(archived.stdout) \(archived.stderrLines)")
            #expect(try await server.psql("SELECT count(*) FROM records") == "10")
            let verified = try await Self.collector(server, ["verify", "--archive", archives])
            #expect(verified.status == 0 && verified.stdout.contains("records 21…30, records up to 20 archived")
                    && verified.stdout.contains("archive 2026-01 intact (11 records)")
                    && verified.stdout.contains("archive 2026-02 intact (9 records)"), "\(verified.stdout)")
            // Shipping goes on; proofs over the whole log still verify.
            try machine.write(2)
            #expect(try await machine.ship().status == 0)
            #expect(try await Self.collector(server, ["proof", "--leaf", "1"]).status == 0)
            #expect(try await Self.collector(server, ["verify", "--archive", archives]).status == 0)

            // The administrator deletes March and says it was archived: verify alone cannot
            // tell, the archives can.
            try await server.psql("""
                UPDATE archived_trails SET through_seq = 30, chain = (SELECT chain FROM records WHERE seq = 30);
                DELETE FROM records WHERE seq <= 30;
                """)
            let hidden = try await Self.collector(server, ["verify", "--archive", archives])
            #expect(hidden.status == 6 && hidden.stdout.contains("where no archive ends"), "\(hidden.stdout)")
            // An archive file changed by a byte.
            let file = archives + "/records-2026-01.jsonl"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
            bytes[bytes.count / 2] ^= 1
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let changed = try await Self.collector(server, ["verify", "--archive", archives])
            #expect(changed.status == 6 && changed.stdout.contains("archive 2026-01 broken"), "\(changed.stdout)")
        }
    }

    @Test("a machine of this release against a collector still at schema 4 fails its shipment as an outage (69, records queued) whose message says to run init; after init it ships and verify says intact")
    func newerMachineAgainstAnOlderSchema() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            let printed = try await Self.collector(server, ["init", "--print"])
            let upToFour = try #require(printed.stdout.components(separatedBy: "-- version 5\n").first)
            try await server.psql("CREATE TABLE schema_version (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())")
            try await server.psql(upToFour)
            try await server.psql("INSERT INTO schema_version (version) VALUES (1), (2), (3), (4)")
            let machine = try Machine("m1", database: server.database)
            defer { machine.remove() }
            try machine.write(5)
            try await FleetTests.register(server, machine: "m1", publicKeyFile: machine.publicKeyFile)
            let refused = try await machine.ship()
            #expect(refused.status == 69 && refused.stdout.contains("outage")
                    && refused.stdout.contains("run `touchgate-collector init` on the database"), "\(refused.stdout)")
            #expect(try await server.psql("SELECT count(*) FROM records") == "0", "nothing of the failed shipment stays")
            let upgraded = try await Self.collector(server, ["init"])
            #expect(upgraded.status == 0 && upgraded.stdout.contains("from version 4 to 5"), "\(upgraded.stdout)")
            let shipped = try await machine.ship()
            #expect(shipped.status == 0, "\(shipped.stdout)")
            #expect(try await server.psql("SELECT count(*) FROM records") == "5")
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 0, "\(verified.stdout)")
        }
    }

    @Test("a collector of schema 3 with records upgrades to monthly partitions: every record lands in its month's partition, none is lost")
    func upgradeMovesRecordsIntoMonths() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            let printed = try await Self.collector(server, ["init", "--print"])
            let upToThree = try #require(printed.stdout.components(separatedBy: "-- version 4\n").first)
            try await server.psql("CREATE TABLE schema_version (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())")
            try await server.psql(upToThree)
            try await server.psql("INSERT INTO schema_version (version) VALUES (1), (2), (3)")
            try await server.psql("""
                INSERT INTO records (machine, trail, seq, unix_time, boot_time, boot_id, uid, login, event, outcome, reason,
                                     prev_mac, mac)
                SELECT 'old', decode(repeat('01', 16), 'hex'), n, 1735689600 + n * 86400 * 10, 1, 'b', 0, 'root',
                       'item.read', 'success', 'r', decode(repeat('00', 32), 'hex'), decode(repeat('00', 32), 'hex')
                FROM generate_series(1, 40) AS n
                """)
            let upgraded = try await Self.collector(server, ["init"])
            #expect(upgraded.status == 0 && upgraded.stdout.contains("from version 3 to 5"), "\(upgraded.stdout) \(upgraded.stderrLines)")
            #expect(try await server.psql("SELECT count(*) FROM records") == "40")
            #expect(try await server.psql("SELECT count(*) FROM records_other") == "0")
            #expect(try await server.psql("SELECT count(DISTINCT tableoid) FROM records") == "14")
        }
    }
}
