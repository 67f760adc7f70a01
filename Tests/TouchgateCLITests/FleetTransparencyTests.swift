import Foundation
import Testing
import TouchgatePolicy
import TouchgateTestSupport
import TouchgateShipping
import TouchgateVault

/// The fleet's audit trail against its own database administrator (docs/FLEET.md: what
/// the log proves): each attack is made with plain SQL on a real PostgreSQL server, and
/// each is caught by `touchgate-collector verify`, by a witness, or by the machine at its
/// next shipment.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FleetTransparencyTests {
    typealias Machine = FleetTests.Machine

    static func collector(_ server: PostgresRig, _ arguments: [String]) async throws -> CLIResult {
        try await FleetTests.collector(server, arguments)
    }

    /// A witness key for `server`'s fleet: its private file, public half and state file.
    static func witness(_ server: PostgresRig, _ name: String) async throws -> (key: String, pub: String, state: String) {
        let key = server.directory + "/\(name).key"
        let made = try await collector(server, ["keygen", "--witness", "--name", "\(name).witness.test", "--out", key])
        try #require(made.status == 0, "\(made.stderrLines)")
        return (key, key + ".pub", server.directory + "/\(name).state")
    }

    /// Runs SQL with psql as `role` (a machine's shipper role): its status and what it printed.
    static func psql(_ server: PostgresRig, as role: String, _ sql: String) async throws -> (status: Int32, output: String) {
        let result = try await runProgram("/usr/bin/psql", [server.database(as: role, local: true), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        return (result.status, result.stdout + result.stderr)
    }

    /// What `sqlite3` reads of a machine's store.
    static func local(_ machine: Machine, _ sql: String) async throws -> String {
        let result = try await runProgram("/usr/bin/sqlite3", [machine.home + "/data/touchgate/touchgate.sqlite", sql])
        try #require(result.status == 0, "sqlite3 (apt-get install sqlite3): \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The administrator rolls the whole log back to `size` entries: entries, nodes and
    /// checkpoints after it, with every record and seal they name. A self-consistent,
    /// smaller database: nothing in it shows the cut.
    static func rollBack(_ server: PostgresRig, to size: Int) async throws {
        try await server.psql("""
            DELETE FROM records r USING log_entries e WHERE e.leaf >= \(size) AND e.kind = 'batch'
                AND r.machine = e.machine AND r.trail = e.trail AND r.seq BETWEEN e.first_seq AND e.last_seq;
            DELETE FROM seals s USING log_entries e WHERE e.leaf >= \(size) AND e.kind = 'batch'
                AND s.machine = e.machine AND s.trail = e.trail AND s.seq BETWEEN e.first_seq AND e.last_seq;
            DELETE FROM log_entries WHERE leaf >= \(size);
            DELETE FROM log_nodes WHERE ((idx + 1) << level) > \(size);
            DELETE FROM checkpoints WHERE size > \(size);
            """)
    }

    @Test("the tail cut back to an earlier shipment, log and all: verify with a kept checkpoint, the witness and the machine's next shipment each refuse it; the machine marks nothing shipped and audits why")
    func cutTailIsCaught() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 20)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            let witness = try await Self.witness(server, "w1")
            for machine in machines { #expect(try await machine.ship().status == 0) }
            let before = try await server.psql("SELECT count(*) FROM log_entries")
            try machines[0].write(10)
            let second = try await machines[0].ship()
            #expect(second.status == 0 && (second.json?["log-size"] as? Int ?? 0) > Int(before)!, "\(second.stdout)")
            try machines[1].write(1)
            #expect(try await machines[1].ship().status == 0)
            // The auditor keeps a checkpoint; the witness cosigns the same state.
            let kept = server.directory + "/kept.checkpoint"
            let checkpoint = try await Self.collector(server, ["checkpoint"])
            try checkpoint.stdout.write(toFile: kept, atomically: true, encoding: .utf8)
            let cosigned = try await Self.collector(server, ["witness", "--key", witness.key, "--state", witness.state])
            #expect(cosigned.status == 0 && cosigned.stdout.contains("cosigned the fleet log"), "\(cosigned.stdout)")
            let full = try await Self.collector(server, ["verify", "--witness-key", witness.pub])
            #expect(full.status == 0 && full.stdout.contains("witness w1.witness.test vouched through"), "\(full.stdout)")

            try await Self.rollBack(server, to: Int(before)!)
            #expect(try await FleetTests.collected(server)["m1"] == [20, 1, 20, 20])
            // On its own the smaller database is consistent: that is what outside state is for.
            let alone = try await Self.collector(server, ["verify"])
            #expect(alone.status == 0, "\(alone.stdout)")
            let withKept = try await Self.collector(server, ["verify", "--checkpoint", kept])
            #expect(withKept.status == 6 && withKept.stdout.contains("cut back"), "\(withKept.stdout)")
            let witnessed = try await Self.collector(server, ["witness", "--key", witness.key, "--state", witness.state])
            #expect(witnessed.status == 6 && witnessed.stderrLines.joined().contains("cut back")
                    && witnessed.stderrLines.joined().contains("not cosigned"), "\(witnessed.stderrLines)")
            let afterWitness = try await Self.collector(server, ["verify", "--witness-key", witness.pub])
            #expect(afterWitness.status == 6 && afterWitness.stdout.contains("witness w1.witness.test cosigned the log at"),
                    "\(afterWitness.stdout)")

            // The machine ships its next record onto the cut log and refuses the answer.
            try machines[0].write(1)
            let cursor = try await Self.local(machines[0], "SELECT seq FROM auditShipped")
            let refused = try await machines[0].ship()
            #expect(refused.status == 6, "\(refused.stdout) \(refused.stderrLines)")
            #expect(refused.stdout.contains("audit-broken") && refused.stdout.contains("nothing was marked shipped"), "\(refused.stdout)")
            await #expect(try Self.local(machines[0], "SELECT seq FROM auditShipped") == cursor)
            let audited = try await Self.local(machines[0], "SELECT outcome || ' ' || reason FROM audit WHERE event = 'audit.ship'")
            #expect(audited.hasPrefix("failure") && audited.contains("shipment to the fleet collector refused"), "\(audited)")
            // And the other machine, which saw the longer log too, refuses it as well.
            try machines[1].write(1)
            let other = try await machines[1].ship()
            #expect(other.status == 6 && other.stdout.contains("cut back"), "\(other.stdout)")
        }
    }

    @Test("deleting a machine's first records and moving first_seq is caught, and stays caught after later shipments")
    func deletedFirstRecordsAreCaught() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1"], records: 30)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            #expect(try await machines[0].ship().status == 0)
            try await server.psql("""
                DELETE FROM records WHERE machine = 'm1' AND seq <= 7; DELETE FROM seals WHERE machine = 'm1' AND seq <= 7;
                UPDATE trails SET first_seq = 8 WHERE machine = 'm1';
                """)
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 6 && verified.stdout.contains("first records were deleted"), "\(verified.stdout)")
            try machines[0].write(5)
            #expect(try await machines[0].ship().status == 0)
            let later = try await Self.collector(server, ["verify"])
            #expect(later.status == 6 && later.stdout.contains("first records were deleted"), "\(later.stdout)")
            // Rewriting the log's own entries to match is the log rewritten: caught too.
            try await server.psql("UPDATE log_entries SET first_seq = 8, body = replace(body, 'records 1 5', 'records 8 5') WHERE leaf = 1")
            let rewritten = try await Self.collector(server, ["verify"])
            #expect(rewritten.status == 6 && rewritten.stdout.contains("fleet log broken"), "\(rewritten.stdout)")
        }
    }

    @Test("deleting a machine's whole trail is caught by name; deleting its log entries too breaks the log")
    func vanishedTrailIsCaught() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 12)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            for machine in machines { #expect(try await machine.ship().status == 0) }
            try await server.psql("""
                DELETE FROM records WHERE machine = 'm2'; DELETE FROM seals WHERE machine = 'm2';
                DELETE FROM trails WHERE machine = 'm2'; DELETE FROM machine_keys WHERE machine = 'm2';
                """)
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 6, "\(verified.stdout)")
            #expect(verified.stdout.split(separator: "\n").contains { $0.hasPrefix("m2 ") && $0.contains("broken")
                && $0.contains("collector holds none of it: deleted") }, "\(verified.stdout)")
            try await server.psql("DELETE FROM log_entries WHERE machine = 'm2'")
            let gone = try await Self.collector(server, ["verify"])
            #expect(gone.status == 6 && gone.stdout.contains("fleet log broken") && gone.stdout.contains("missing"), "\(gone.stdout)")
        }
    }

    @Test("a key the administrator adds (by SQL, or registered with another enrollment key) and a trail filed under it, replacing the machine's history, is caught; so is one machine's trail replayed as another's")
    func replacedHistoryIsCaught() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 15)
        let impostor = try Machine("m1", database: server.database)
        defer { (machines + [impostor]).forEach { $0.remove() } }
        try await server.removing { server in
            let enrollment = try await FleetTests.enrollmentKey(server)
            for machine in machines { #expect(try await machine.ship().status == 0) }
            let intact = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub])
            #expect(intact.status == 0 && !intact.stdout.contains("note: keys were taken"), "\(intact.stdout)")

            // The administrator's own store, shipped as m1, with m1's history deleted and the
            // administrator's key registered for m1 by SQL.
            try await server.psql("""
                DELETE FROM records WHERE machine = 'm1'; DELETE FROM seals WHERE machine = 'm1'; DELETE FROM trails WHERE machine = 'm1';
                INSERT INTO machine_keys (machine, public_key) VALUES ('m1', decode('\(try String(contentsOfFile: impostor.publicKeyFile, encoding: .utf8))', 'hex'));
                """)
            try impostor.write(15)
            #expect(try await impostor.ship().status == 0)
            // Without the enrollment key the table's word is taken, and still the deletion shows.
            let trusting = try await Self.collector(server, ["verify"])
            #expect(trusting.status == 6 && trusting.stdout.contains("note: keys were taken as registered"), "\(trusting.stdout)")
            let checked = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub])
            let lines = checked.stdout.split(separator: "\n")
            #expect(checked.status == 6, "\(checked.stdout)")
            #expect(lines.contains { $0.hasPrefix("m1 ") && $0.contains("not registered for machine m1 by the enrollment key") },
                    "\(checked.stdout)")
            #expect(lines.contains { $0.hasPrefix("m1 ") && $0.contains("collector holds none of it: deleted") }, "\(checked.stdout)")

            // A second key registered with the enrollment key (a reinstalled machine) is
            // legitimate, and shows: which keys, which entries, when.
            let swapped = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub, "--machine", "m2"])
            #expect(!swapped.stdout.contains("keys registered"), "\(swapped.stdout)")
            try await FleetTests.register(server, machine: "m2", publicKeyFile: impostor.publicKeyFile)
            let twoKeys = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub, "--machine", "m2"])
            #expect(twoKeys.stdout.contains("machine m2 has 2 keys registered"), "\(twoKeys.stdout)")

            // A registration signed by a key the administrator made is not the enrollment key's.
            let rogue = server.directory + "/rogue.key"
            #expect(try await Self.collector(server, ["keygen", "--name", "enroll.fleet.test", "--out", rogue]).status == 0)
            let registered = try await Self.collector(server, ["register", "--machine", "m1", "--public-key",
                                                               impostor.publicKeyFile, "--enrollment-key", rogue])
            #expect(registered.status == 0, "\(registered.stderrLines)")
            let forged = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub])
            #expect(forged.status == 6 && forged.stdout.contains("without the enrollment key's signature: forged"), "\(forged.stdout)")
        }
    }

    @Test("one machine's records replayed as another's are in no shipment of the log")
    func replayedRecordsAreCaught() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 10)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            for machine in machines { #expect(try await machine.ship().status == 0) }
            // m1's trail copied under m3, m1's key registered for m3 as well.
            try await server.psql("""
                INSERT INTO machine_keys (machine, public_key) SELECT 'm3', public_key FROM machine_keys WHERE machine = 'm1';
                INSERT INTO trails (machine, trail, public_key, first_seq) SELECT 'm3', trail, public_key, first_seq FROM trails WHERE machine = 'm1';
                INSERT INTO records SELECT 'm3', trail, seq, unix_time, boot_time, boot_id, uid, login, vault_user, event, item,
                    outcome, reason, prev_mac, mac, prev_chain, chain, received FROM records WHERE machine = 'm1';
                INSERT INTO seals SELECT 'm3', trail, seq, chain, public_key, signature, received FROM seals WHERE machine = 'm1';
                """)
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 6, "\(verified.stdout)")
            #expect(verified.stdout.split(separator: "\n").contains { $0.hasPrefix("m3 ") && $0.contains("no shipment of this trail is in the fleet log") },
                    "\(verified.stdout)")
        }
    }

    @Test("each machine ships as its own role: another machine's credentials cannot write, read, change or delete its rows; squatted sequence numbers make its shipment fail (6) with nothing marked shipped, until they are gone")
    func perMachineWriteRights() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            #expect(try await Self.collector(server, ["init"]).status == 0)
            try await server.shipperRoles("m1", "m2")
            let m1 = try Machine("m1", database: server.database(as: "m1"))
            let m2 = try Machine("m2", database: server.database(as: "m2"))
            defer { [m1, m2].forEach { $0.remove() } }
            try m1.write(10)
            try m2.write(10)
            for machine in [m1, m2] {
                let shipped = try await machine.ship()
                #expect(shipped.status == 0, "\(machine.name) ships as its role with the grants init made: \(shipped.stdout)")
                try await FleetTests.register(server, machine: machine.name, publicKeyFile: machine.publicKeyFile)
            }
            let insert = try await Self.psql(server, as: "m2", """
                INSERT INTO records SELECT 'm1', trail, 11, unix_time, boot_time, boot_id, uid, login, vault_user, event, item,
                    outcome, 'squatted', prev_mac, mac, prev_chain, chain FROM records WHERE seq = 10
                """)
            #expect(insert.status != 0 && insert.output.contains("row-level security"), "\(insert.output)")
            await #expect(try Self.psql(server, as: "m2", "SELECT count(*) FROM records WHERE machine = 'm1'").output.hasPrefix("0"))
            let update = try await Self.psql(server, as: "m2", "UPDATE records SET reason = 'x' WHERE machine = 'm2'")
            #expect(update.status != 0 && update.output.contains("permission denied"), "\(update.output)")
            let delete = try await Self.psql(server, as: "m2", "DELETE FROM log_entries")
            #expect(delete.status != 0 && delete.output.contains("permission denied"), "\(delete.output)")
            let entry = try await Self.psql(server, as: "m2", "INSERT INTO log_entries (leaf, kind, machine, body) VALUES (1000, 'batch', 'm2', 'x')")
            #expect(entry.status != 0 && entry.output.contains("permission denied"), "\(entry.output)")

            // The administrator takes m1's next sequence numbers with records of its own.
            try await server.psql("""
                INSERT INTO records SELECT machine, trail, seq + 5, unix_time, boot_time, boot_id, uid, login, vault_user, event,
                    item, outcome, 'squatted', prev_mac, mac, prev_chain, chain FROM records WHERE machine = 'm1' AND seq > 5
                """)
            try m1.write(5)
            let squatted = try await m1.ship()
            #expect(squatted.status == 6, "\(squatted.stdout) \(squatted.stderrLines)")
            #expect(squatted.stdout.contains("already holds other records than this machine's at sequences 11…15"), "\(squatted.stdout)")
            await #expect(try Self.local(m1, "SELECT seq FROM auditShipped") == "10")
            await #expect(try Self.local(m1, "SELECT count(*) FROM audit WHERE event = 'audit.ship' AND outcome = 'failure'") == "1")
            #expect(try await server.psql("SELECT count(*) FROM records WHERE machine = 'm1' AND reason <> 'squatted'") == "10")

            try await server.psql("DELETE FROM records WHERE reason = 'squatted'")
            let shipped = try await m1.ship()
            #expect(shipped.status == 0, "\(shipped.stdout)")
            let enrollment = try await FleetTests.enrollmentKey(server)
            let verified = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub])
            #expect(verified.status == 0 && verified.stdout.contains("none broken"), "\(verified.stdout)")
        }
    }

    @Test("a witness vouches for what it saw; verify reports how far; a rewritten entry or a forged cosignature breaks the log")
    func witnessesVouch() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1"], records: 10)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            let (w1, w2) = (try await Self.witness(server, "w1"), try await Self.witness(server, "w2"))
            #expect(try await machines[0].ship().status == 0)
            let first = try await Self.collector(server, ["witness", "--key", w1.key, "--state", w1.state, "--json"])
            #expect(first.status == 0, "\(first.stdout) \(first.stderrLines)")
            let size = try #require(first.json?["size"] as? String)
            let firstState = try #require(Checkpoint(body: try String(contentsOfFile: w1.state, encoding: .utf8)))
            try machines[0].write(10)
            #expect(try await machines[0].ship().status == 0)
            #expect(try await Self.collector(server, ["witness", "--key", w1.key, "--state", w1.state]).status == 0)
            let total = try await server.psql("SELECT count(*) FROM log_entries")
            #expect(Int(total)! > Int(size)!)
            let report = try await Self.collector(server, ["verify", "--witness-key", w1.pub, "--witness-key", w2.pub])
            #expect(report.status == 0, "\(report.stdout)")
            #expect(report.stdout.contains("witness w1.witness.test vouched through \(total) of \(total) entries"), "\(report.stdout)")
            #expect(report.stdout.contains("witness w2.witness.test has cosigned nothing"), "\(report.stdout)")
            // The proofs an auditor's own tools can check: entry 1's inclusion, and the log's
            // consistency with the checkpoint the witness kept after its first round.
            let proof = try await Self.collector(server, ["proof", "--leaf", "1", "--from", size])
            let object = try #require(proof.json, "\(proof.stdout) \(proof.stderrLines)")
            let newest = try #require((object["checkpoint"] as? String).flatMap { SignedNote.parse($0)?.body }.flatMap(Checkpoint.init(body:)))
            let entry = try #require(object["entry"] as? String)
            func hashes(_ key: String) -> [[UInt8]] {
                ((object[key] as? [String]) ?? []).compactMap { Data(base64Encoded: $0).map(Array.init) }
            }
            #expect(newest.size == Int64(total)!)
            #expect(MerkleTree.verifyInclusion(leaf: MerkleTree.leafHash(Array(entry.utf8)), index: 1, size: newest.size,
                                               proof: hashes("inclusion"), root: newest.root))
            #expect(MerkleTree.verifyConsistency(old: firstState.size, oldRoot: firstState.root, size: newest.size,
                                                 root: newest.root, proof: hashes("consistency")))
            #expect(!hashes("consistency").isEmpty && hashes("inclusion").count >= 2)

            // A witness key is not an enrollment key.
            let wrongKind = try await Self.collector(server, ["verify", "--enrollment-key", w1.pub])
            #expect(wrongKind.status == 64 && wrongKind.stderrLines.joined().contains("not the public half of an enrollment key"),
                    "\(wrongKind.stderrLines)")

            // w2's cosignature forged by copying w1's line under w2's name.
            try await server.psql("INSERT INTO cosignatures (witness, size, line) SELECT 'w2.witness.test', size, replace(line, 'w1.', 'w2.') FROM cosignatures WHERE witness = 'w1.witness.test'")
            let forged = try await Self.collector(server, ["verify", "--witness-key", w2.pub])
            #expect(forged.status == 6 && forged.stdout.contains("cosignature"), "\(forged.stdout)")
            try await server.psql("DELETE FROM cosignatures WHERE witness = 'w2.witness.test'")

            // A shipment entry rewritten, columns and all: its leaf no longer gives the
            // checkpointed (and cosigned) root.
            try await server.psql("UPDATE log_entries SET first_seq = 2, body = replace(body, 'records 1 5', 'records 2 5') WHERE leaf = 1")
            let rewritten = try await Self.collector(server, ["verify", "--witness-key", w1.pub])
            #expect(rewritten.status == 6 && rewritten.stdout.contains("fleet log broken")
                    && rewritten.stdout.contains("does not match the log"), "\(rewritten.stdout)")
        }
    }

    @Test("kill -9 of the shipper at random moments (mid-batch, between the commit and the proofs) loses and repeats nothing: every record once, every batch once in the log, verify intact")
    func killedShipperLosesNothing() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1"], records: 400)
        let machine = machines[0]
        defer { machine.remove() }
        try await server.removing { server in
            var generator = SystemRandomNumberGenerator()
            var killed = 0
            for attempt in 0..<12 {
                let process = try await BackgroundProcess.start(CLIProcess.binary, ["audit", "ship", "--config", machine.config],
                                                                environment: machine.environment)
                // Random moments, earliest first (20 ms to 0.4 s): a shipment the kill missed ships
                // the whole trail, and every later one would find nothing left to interrupt (in one
                // CI run the first draw was late, and no shipment was killed at all).
                try await Task.sleep(for: .milliseconds(20 + attempt * 30 + Int.random(in: 0..<30, using: &generator)))
                if process.isRunning {
                    process.send(SIGKILL)
                    killed += 1
                }
                await process.exited()
            }
            #expect(killed > 0, "no shipment was still running when killed: the test proved nothing")
            let final = try await machine.ship()
            #expect(final.status == 0, "\(final.stdout) \(final.stderrLines)")
            #expect(try await FleetTests.collected(server)["m1"] == [400, 1, 400, 400])
            #expect(try await server.psql("""
                SELECT count(*) FROM (SELECT last_seq FROM log_entries WHERE kind = 'batch' GROUP BY machine, trail, last_seq
                HAVING count(*) > 1) AS repeated
                """) == "0")
            let enrollment = try await FleetTests.enrollmentKey(server)
            let verified = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub])
            #expect(verified.status == 0 && verified.stdout.contains("none broken") && verified.stdout.contains("fleet log intact"),
                    "\(verified.stdout)")
        }
    }

    @Test("an entry overwritten with another's while the stored nodes stay (the first records then deleted) is caught by verify and by a witness")
    func rewrittenEntriesAreCaught() async throws {
        let (server, machines) = try await FleetTests.fleet(["m1", "m2"], records: 15)
        defer { machines.forEach { $0.remove() } }
        try await server.removing { server in
            for machine in machines { #expect(try await machine.ship().status == 0) }
            let enrollment = try await FleetTests.enrollmentKey(server)
            let witness = try await Self.witness(server, "w1")
            // m1's first shipment (entry 2, after the two registrations) overwritten with m2's
            // first; m1's first records deleted to match; nothing after entry 2 checkpointed.
            try await server.psql("""
                UPDATE log_entries e SET machine = o.machine, trail = o.trail, first_seq = o.first_seq, last_seq = o.last_seq,
                    body = o.body FROM log_entries o WHERE e.leaf = 2 AND o.leaf = 5;
                DELETE FROM records WHERE machine = 'm1' AND seq <= 5; DELETE FROM seals WHERE machine = 'm1' AND seq <= 5;
                UPDATE trails SET first_seq = 6 WHERE machine = 'm1';
                """)
            let verified = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub])
            #expect(verified.status == 6 && verified.stdout.contains("fleet log broken"), "\(verified.stdout)")
            let witnessed = try await Self.collector(server, ["witness", "--key", witness.key, "--state", witness.state])
            #expect(witnessed.status == 6 && witnessed.stderrLines.joined().contains("entry 2 is not the leaf its tree holds"),
                    "\(witnessed.stdout) \(witnessed.stderrLines)")
            #expect(!FileManager.default.fileExists(atPath: witness.state))
        }
    }

    @Test("a batch head a machine's credentials append with a forged signature breaks that machine's trail alone: the log and every other machine stay intact and keep shipping")
    func forgedBatchHeadStaysWithItsMachine() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            #expect(try await Self.collector(server, ["init"]).status == 0)
            try await server.shipperRoles("m1", "m2")
            let m1 = try Machine("m1", database: server.database(as: "m1"))
            let m2 = try Machine("m2", database: server.database(as: "m2"))
            defer { [m1, m2].forEach { $0.remove() } }
            for machine in [m1, m2] {
                try machine.write(10)
                #expect(try await machine.ship().status == 0)
                try await FleetTests.register(server, machine: machine.name, publicKeyFile: machine.publicKeyFile)
            }
            // m2's credentials copy its own records 6…10 to sequences 11…15 and append a batch
            // head naming them, whose signature line has the right form and the wrong bytes.
            let forged = try await Self.psql(server, as: "m2", """
                INSERT INTO records SELECT machine, trail, seq + 5, unix_time, boot_time, boot_id, uid, login, vault_user,
                    event, item, outcome, reason, prev_mac, mac, prev_chain, chain FROM records WHERE seq > 5;
                SELECT touchgate_ship_batch('m2', r.trail, 11, 15,
                    'touchgate.fleet/batch/v1' || E'\\n' || 'machine m2' || E'\\n' || 'trail ' || encode(r.trail, 'hex') || E'\\n'
                    || 'records 11 15' || E'\\n' || 'previous ' || encode(r.prev_chain, 'hex') || E'\\n'
                    || 'chain ' || encode(l.chain, 'hex') || E'\\n' || 'key ' || encode(t.public_key, 'hex') || E'\\n\\n'
                    || '\u{2014} m2 ' || repeat('A', 91) || '=' || E'\\n')
                FROM records r JOIN records l ON l.trail = r.trail AND l.seq = 15 JOIN trails t ON t.trail = r.trail
                WHERE r.seq = 11;
                """)
            #expect(forged.status == 0, "\(forged.output)")
            let enrollment = try await FleetTests.enrollmentKey(server)
            let verified = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub])
            #expect(verified.status == 6 && verified.stdout.contains("fleet log intact")
                    && verified.stdout.contains("is not signed by the key it names: forged")
                    && verified.stdout.contains("1 of 2 trail(s) broken, on m2"), "\(verified.stdout)")
            try m1.write(3)
            #expect(try await m1.ship().status == 0)
            let alone = try await Self.collector(server, ["verify", "--enrollment-key", enrollment.pub, "--machine", "m1"])
            #expect(alone.status == 0 && alone.stdout.contains("none broken"), "\(alone.stdout)")
        }
    }

    @Test("the time a batch head's records span, which the machine names so that the checks read only their months, only narrows the checks: a span that misses the rows is refused as naming records not held, one that holds them appends; the five-argument call of machines of before still appends")
    func batchSpanOnlyNarrowsTheChecks() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            #expect(try await Self.collector(server, ["init"]).status == 0)
            try await server.shipperRoles("m2")
            let m2 = try Machine("m2", database: server.database(as: "m2"))
            defer { m2.remove() }
            try m2.write(10)
            #expect(try await m2.ship().status == 0)
            // m2's login copies its records 1…10 to 11…20 (a month later), and names them in heads.
            let copied = try await Self.psql(server, as: "m2", """
                INSERT INTO records SELECT machine, trail, seq + 10, unix_time + 2678400, boot_time, boot_id, uid, login,
                    vault_user, event, item, outcome, reason, prev_mac, mac, prev_chain, chain FROM records
                """)
            #expect(copied.status == 0, "\(copied.output)")
            func head(_ first: Int, _ last: Int, _ span: String?) -> String {
                """
                SELECT touchgate_ship_batch('m2', r.trail, \(first), \(last),
                    'touchgate.fleet/batch/v1' || E'\\n' || 'machine m2' || E'\\n' || 'trail ' || encode(r.trail, 'hex') || E'\\n'
                    || 'records \(first) \(last)' || E'\\n' || 'previous ' || encode(r.prev_chain, 'hex') || E'\\n'
                    || 'chain ' || encode(l.chain, 'hex') || E'\\n' || 'key ' || encode(t.public_key, 'hex') || E'\\n\\n'
                    || '\u{2014} m2 ' || repeat('A', 91) || '=' || E'\\n'\(span.map { ", " + $0 } ?? ""))
                FROM records r JOIN records l ON l.trail = r.trail AND l.seq = \(last) JOIN trails t ON t.trail = r.trail
                WHERE r.seq = \(first)
                """
            }
            let times = "(SELECT min(unix_time) FROM records WHERE seq BETWEEN 11 AND 15)"
            let timesEnd = "(SELECT max(unix_time) FROM records WHERE seq BETWEEN 11 AND 15)"
            let size = try await server.psql("SELECT count(*) FROM log_entries")
            for (what, span) in [
                ("a span a month early", "\(times) - 2678400, \(timesEnd) - 2678400"),
                ("an empty span", "'Infinity', '-Infinity'"),
                ("a span of no number", "'NaN', 'NaN'"),
            ] {
                let refused = try await Self.psql(server, as: "m2", head(11, 15, span))
                #expect(refused.status != 0 && refused.output.contains("does not hold whole"), "\(what): \(refused.output)")
            }
            #expect(try await server.psql("SELECT count(*) FROM log_entries") == size)
            let spanned = try await Self.psql(server, as: "m2", head(11, 15, "\(times), \(timesEnd)"))
            #expect(spanned.status == 0 && spanned.output.trimmingCharacters(in: .whitespacesAndNewlines) == size,
                    "\(spanned.output)")
            let before = try await Self.psql(server, as: "m2", head(16, 20, nil))
            #expect(before.status == 0 && Int(before.output.trimmingCharacters(in: .whitespacesAndNewlines)) == Int(size)! + 1,
                    "\(before.output)")
            // The heads' signatures are forged: m2's trail is broken, the log is not.
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 6 && verified.stdout.contains("fleet log intact")
                    && verified.stdout.contains("trail(s) broken, on m2"), "\(verified.stdout)")
        }
    }

    @Test("a machine's credentials cannot plant a node, an entry or a checkpoint (the attacks that broke the log for good), nor append for another machine or for rows it did not store; a node the administrator plants makes shipments fail as a damaged log (6), never as an outage, and verify names it")
    func plantedLogRowsAreRefused() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            #expect(try await Self.collector(server, ["init"]).status == 0)
            try await server.shipperRoles("m1", "m2")
            let m1 = try Machine("m1", database: server.database(as: "m1"))
            defer { m1.remove() }
            try m1.write(10)
            #expect(try await m1.ship().status == 0)
            try await FleetTests.register(server, machine: "m1", publicKeyFile: m1.publicKeyFile)
            let size = try await server.psql("SELECT count(*) FROM log_entries")
            for attack in [
                "INSERT INTO log_nodes VALUES (0, \(size), decode(repeat('00', 32), 'hex'))",
                "INSERT INTO log_entries (leaf, kind, machine, body) VALUES (\(size), 'batch', 'm2', 'x')",
                "INSERT INTO checkpoints VALUES (281474976710656, 'x', 'm2')",
                "INSERT INTO cosignatures VALUES ('w', 1, 'x')",
                "UPDATE fleet_log SET origin = 'touchgate.fleet/x'",
                "SELECT touchgate_log_append('batch', 'm2', NULL, NULL, NULL, 'x')",
            ] {
                let refused = try await Self.psql(server, as: "m2", attack)
                #expect(refused.status != 0 && refused.output.contains("permission denied"), "\(attack): \(refused.output)")
            }
            let foreign = try await Self.psql(server, as: "m2", "SELECT touchgate_ship_batch('m1', decode(repeat('00', 16), 'hex'), 1, 5, 'x')")
            #expect(foreign.status != 0 && foreign.output.contains("may ship only as machine m2"), "\(foreign.output)")
            let unstored = try await Self.psql(server, as: "m2", "SELECT touchgate_ship_batch('m2', decode(repeat('00', 16), 'hex'), 1, 5, 'x')")
            #expect(unstored.status != 0 && unstored.output.contains("does not hold whole"), "\(unstored.output)")
            #expect(try await server.psql("SELECT count(*) FROM log_entries") == size)
            try m1.write(1)
            #expect(try await m1.ship().status == 0)
            let clean = try await Self.collector(server, ["verify"])
            #expect(clean.status == 0, "\(clean.stdout)")

            // The administrator plants a node where the next append's leaf goes: the shipment
            // fails at once as a damaged log (not an outage), and verify names it.
            let next = try await server.psql("SELECT count(*) FROM log_entries")
            try await server.psql("INSERT INTO log_nodes VALUES (0, \(next), decode(repeat('00', 32), 'hex'))")
            let planted = try await Self.collector(server, ["verify"])
            #expect(planted.status == 6 && planted.stdout.contains("fleet log broken"), "\(planted.stdout)")
            try m1.write(1)
            let started = Date()
            let blocked = try await m1.ship()
            #expect(blocked.status == 6 && blocked.stdout.contains("audit-broken") && blocked.stdout.contains("log damaged")
                    && Date().timeIntervalSince(started) < 30, "\(blocked.stdout)")
            try await server.psql("DELETE FROM log_nodes WHERE level = 0 AND idx = \(next)")
            let resumed = try await m1.ship()
            #expect(resumed.status == 0, "\(resumed.stdout)")
            let after = try await Self.collector(server, ["verify"])
            #expect(after.status == 0, "\(after.stdout)")
        }
    }

    @Test("a machine's login cannot take the append lock (FOR UPDATE on fleet_log is refused), and the advisory lock it once could hold delays nobody; the administrator's session holding the lock delays shipments by the lock timeout at most: they fail (69, records queued) and go through once it lets go")
    func heldAppendLockHasADeadline() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            #expect(try await Self.collector(server, ["init"]).status == 0)
            try await server.shipperRoles("m1", "m2")
            let m1 = try Machine("m1", database: server.database(as: "m1"))
            defer { m1.remove() }
            try m1.write(10)
            let take = try await Self.psql(server, as: "m2", "BEGIN; SELECT 1 FROM fleet_log FOR UPDATE; COMMIT;")
            #expect(take.status != 0 && take.output.contains("permission denied"), "\(take.output)")
            // The lock appends took before schema 3, held by m2's login: it no longer stops anyone.
            let advisory = try await BackgroundProcess.start(
                "/usr/bin/psql", [server.database(as: "m2", local: true), "-X", "-q",
                                  "-c", "BEGIN; SELECT pg_advisory_xact_lock(7301955104); SELECT pg_sleep(90); COMMIT;"],
                environment: ProcessInfo.processInfo.environment)
            defer { advisory.stop(signal: SIGTERM) }
            let quick = Date()
            #expect(try await m1.ship().status == 0)
            #expect(Date().timeIntervalSince(quick) < 10)

            let holder = try await BackgroundProcess.start(
                "/usr/bin/psql", [server.localDatabase, "-X", "-q",
                                  "-c", "BEGIN; SELECT 1 FROM fleet_log FOR UPDATE; SELECT pg_sleep(90); COMMIT;"],
                environment: ProcessInfo.processInfo.environment)
            defer { holder.stop(signal: SIGTERM) }
            var held = ""
            for _ in 0..<100 where held != "1" {
                held = try await server.psql("""
                    SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%FOR UPDATE%pg_sleep(90)%' AND pid <> pg_backend_pid()
                    """)
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(held == "1")
            try m1.write(1)
            let started = Date()
            let waited = try await m1.ship()
            let seconds = Date().timeIntervalSince(started)
            #expect(waited.status == 69 && waited.stdout.contains("lock timeout") && waited.stdout.contains("stay queued"),
                    "\(waited.stdout)")
            #expect(seconds >= 14 && seconds < 60, "waited \(seconds) s")
            try await server.psql("""
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%FOR UPDATE%' AND pid <> pg_backend_pid()
                """)
            await holder.exited()
            let shipped = try await m1.ship()
            #expect(shipped.status == 0, "\(shipped.stdout)")
            #expect(try await FleetTests.collected(server)["m1"] == [11, 1, 11, 11])
        }
    }
}
