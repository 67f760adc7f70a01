import Foundation
import Synchronization
import Testing
import TouchgatePolicy
import TouchgateTestSupport
import TouchgateVault

/// Central collection on a real PostgreSQL server: machines shipping at once, the server
/// going away mid-stream, tampering in the database that the collector's verify reports,
/// and queries over what was collected.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FleetTests {
    /// 2026-01-01T00:00:00Z: record i of a machine is written at this moment plus i minutes.
    static let base = 1_767_225_600.0

    /// One simulated workstation: a personal store of its own and a fleet.conf naming it.
    final class Machine: Sendable {
        let name: String
        let home: String
        let config: String
        /// What was written, in order.
        let written = Mutex<[AuditRecord]>([])
        let publicKeyFile: String

        /// Minutes of the machine's clock between two records.
        let step: Double

        init(_ name: String, database: String, batchSize: Int = 5, backlogLimit: Int = 100_000, settings: String = "",
             minutesBetweenRecords step: Double = 1) throws {
            self.name = name
            self.step = step
            home = FileManager.default.temporaryDirectory.appendingPathComponent("tg-fleet-\(name)-\(UUID().uuidString.prefix(6))").path
            try FileManager.default.createDirectory(atPath: home + "/data", withIntermediateDirectories: true)
            config = home + "/fleet.conf"
            try ("# test fleet\ndatabase = \(database)\nmachine = \(name)\nbatch-size = \(batchSize)\nbacklog-limit = \(backlogLimit)\n"
                 + settings).write(toFile: config, atomically: true, encoding: .utf8)
            chmod(config, 0o644)
            publicKeyFile = home + "/machine.pub"
            try Hex.encode(try open { log, _ in log.publicKey }).write(toFile: publicKeyFile, atomically: true, encoding: .utf8)
        }

        var environment: [String: String] {
            ["HOME": home, "XDG_DATA_HOME": home + "/data", "TOUCHGATE_SOCKET": "", "LC_ALL": "C"]
        }

        /// Runs `body` on the machine's audit log, whose clock reads ``base`` plus the minutes
        /// `body` sets in the mutex it is given.
        private func open<T>(_ body: (AuditLog, borrowing Mutex<Int>) throws -> T) throws -> T {
            let database = try TouchgateDatabase(location: StoreLocation.fromEnvironment(environment))
            defer { try? database.closeConnections() }
            let minute = Mutex(0)
            let offset = Double(name.utf8.last ?? 0) / 100
            let step = step
            let log = try AuditLog(database: database, journal: .disabled) {
                Date(timeIntervalSince1970: FleetTests.base + offset + Double(minute.withLock { $0 }) * 60 * step)
            }
            return try body(log, minute)
        }

        /// Appends `count` records of varied events, outcomes and items.
        func write(_ count: Int) throws {
            let start = written.withLock { $0.count }
            let events: [AuditEvent] = [.itemRead, .authAttempt, .itemWrite, .vaultUnlock]
            let outcomes: [AuditOutcome] = [.success, .failure, .denied]
            let records = try open { log, minute in
                try (start..<(start + count)).map { index in
                    minute.withLock { $0 = index }
                    return try log.append(events[index % 4], outcomes[index % 3], vaultUser: "user-\(name)",
                                          item: "item-\(index % 5)", reason: "test record \(index)")
                }
            }
            written.withLock { $0 += records }
        }

        /// Ships; a shipment held by the server (the tests hold some on purpose, up to a minute
        /// before the server is stopped) is killed only after five minutes.
        func ship(config: String? = nil) async throws -> CLIResult {
            try await CLIProcess(environment: environment).run(["audit", "ship", "--json", "--config", config ?? self.config],
                                                               timeout: 300)
        }

        func remove() { try? FileManager.default.removeItem(atPath: home) }
    }

    /// Runs touchgate-collector against `server` (over TCP, or its Unix socket with `local`).
    static func collector(_ server: PostgresRig, _ arguments: [String], local: Bool = false) async throws -> CLIResult {
        var process = CLIProcess(environment: ["TOUCHGATE_COLLECTOR_DATABASE": local ? server.localDatabase : server.database,
                                               "LC_ALL": "C"])
        process.binaryOverride = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent()
            .appendingPathComponent("touchgate-collector").path
        return try await process.run(arguments)
    }

    /// A server with the schema applied and `names` registered, each with `records` records.
    static func fleet(_ names: [String], records: Int, batchSize: Int = 5) async throws -> (PostgresRig, [Machine]) {
        let server = try await PostgresRig()
        let initialised = try await collector(server, ["init"])
        try #require(initialised.status == 0, "\(initialised.stderrLines)")
        #expect(initialised.stdout.contains("from version 0 to 5"))
        #expect(try await collector(server, ["init"]).stdout.contains("already at version 5"))
        var machines: [Machine] = []
        for name in names {
            let machine = try Machine(name, database: server.database, batchSize: batchSize)
            try machine.write(records)
            try await register(server, machine: name, publicKeyFile: machine.publicKeyFile)
            machines.append(machine)
        }
        return (server, machines)
    }

    /// The enrollment key of `server`'s fleet (made on first use), as the administrator keeps
    /// it: its private file and the public half an auditor verifies with.
    static func enrollmentKey(_ server: PostgresRig) async throws -> (key: String, pub: String) {
        let key = server.directory + "/enrollment.key"
        if !FileManager.default.fileExists(atPath: key) {
            let made = try await collector(server, ["keygen", "--name", "enroll.fleet.test", "--out", key])
            try #require(made.status == 0, "\(made.stderrLines)")
        }
        return (key, key + ".pub")
    }

    /// `touchgate-collector register` of a machine's key, signed by the fleet's enrollment key.
    static func register(_ server: PostgresRig, machine: String, publicKeyFile: String, local: Bool = false) async throws {
        let registered = try await collector(server, ["register", "--machine", machine, "--public-key", publicKeyFile,
                                                      "--enrollment-key", try await enrollmentKey(server).key], local: local)
        try #require(registered.status == 0, "\(registered.stderrLines)")
    }

    /// `{"machine": {"count","min","max","distinct"}}` of the collected records.
    static func collected(_ server: PostgresRig) async throws -> [String: [Int]] {
        let text = try await server.psql("""
            SELECT machine, count(*), min(seq), max(seq), count(DISTINCT seq) FROM records GROUP BY machine ORDER BY machine
            """)
        var result: [String: [Int]] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "|").map(String.init)
            result[fields[0]] = fields.dropFirst().compactMap { Int($0) }
        }
        return result
    }

    @Test("three machines ship at once; the server stops mid-stream and restarts; nothing is lost or repeated; queries find the right rows")
    func concurrentShippingSurvivesARestart() async throws {
        let (server, machines) = try await Self.fleet(["m1", "m2", "m3"], records: 400)
        defer {
            machines.forEach { $0.remove() }
        }
        try await server.removing { server in
            // Ship all three at once, in batches of 5, and stop the server mid-stream: a
            // trigger holds every insert past record 100 until the server goes away, so each
            // machine has 100 records committed and its next batch in flight when it stops.
            try await server.psql("""
                CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN IF NEW.seq > 100 THEN PERFORM pg_sleep(600); END IF; RETURN NEW; END $$;
                CREATE TRIGGER hold BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION hold();
                """)
            async let shipments = withThrowingTaskGroup(of: CLIResult.self) { group in
                for machine in machines { group.addTask { try await machine.ship() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            var held = ""
            for _ in 0..<600 where held != "3" {
                held = try await server.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(held == "3", "the shipments never reached record 101: \(held) held")
            try await server.stop()
            let interrupted = try await shipments
            for result in interrupted {
                #expect(result.status == 0 || result.status == 69, "\(result.stdout) \(result.stderrLines)")
            }
            let cut = interrupted.filter { $0.status == 69 }
            #expect(cut.count == 3, "every shipment was cut: \(interrupted.map(\.stdout))")
            for result in cut {
                #expect(result.stdout.contains("collector-unavailable") && result.stdout.contains("stay queued"), "\(result.stdout)")
            }

            // While it is away, more records are written, and shipping says they wait.
            for machine in machines { try machine.write(100) }
            let away = try await machines[0].ship()
            #expect(away.status == 69 && away.stdout.contains("wait to be shipped"), "\(away.stdout)")
            let small = machines[0].home + "/small.conf"
            try "database = \(server.database)\nmachine = m1\nbacklog-limit = 10\n".write(toFile: small, atomically: true, encoding: .utf8)
            let full = try await machines[0].ship(config: small)
            #expect(full.status == 12 && full.stdout.contains("backlog-full") && full.stdout.contains("backlog limit of 10"),
                    "\(full.stdout)")

            try await server.start()
            try await server.psql("DROP TRIGGER hold ON records; DROP FUNCTION hold()")
            let partial = try await Self.collected(server)
            // What the cut transactions held never landed: records 1…100 of each, exactly.
            #expect(partial == ["m1": [100, 1, 100, 100], "m2": [100, 1, 100, 100], "m3": [100, 1, 100, 100]], "\(partial)")
            // What arrived so far verifies; an interrupted shipment's tail is unsealed, not broken.
            let midway = try await Self.collector(server, ["verify", "--json"])
            #expect(midway.status == 0, "\(midway.stdout)")
            #expect(!midway.stdout.contains("\"broken\""), "\(midway.stdout)")

            // Shipping again, all at once, completes every trail exactly.
            let resumed = try await withThrowingTaskGroup(of: CLIResult.self) { group in
                for machine in machines { group.addTask { try await machine.ship() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for result in resumed { #expect(result.status == 0, "\(result.stdout) \(result.stderrLines)") }
            let complete = try await Self.collected(server)
            for machine in machines {
                let count = machine.written.withLock { $0.count }
                #expect(complete[machine.name] == [count, 1, count, count], "\(machine.name): \(complete)")
                let lastChain = machine.written.withLock { $0.last!.chain.map { Hex.encode($0) } }
                let stored = try await server.psql("""
                    SELECT encode(chain, 'hex') FROM records WHERE machine = '\(machine.name)' ORDER BY seq DESC LIMIT 1
                    """)
                #expect(stored == lastChain, "\(machine.name)")
            }
            // Nothing more to send: a second run sends only the seal.
            let again = try await machines[1].ship()
            #expect(again.status == 0 && again.json?["shipped"] as? Int == 0, "\(again.stdout)")

            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 0, "\(verified.stdout) \(verified.stderrLines)")
            #expect(verified.stdout.contains("3 trail(s) of 3 machine(s) verified: none broken"), "\(verified.stdout)")

            // Queries: each filter, compared with what the machines wrote.
            let all = machines.flatMap { machine in machine.written.withLock { $0 }.map { (machine.name, $0) } }
            func query(_ arguments: [String]) async throws -> [[String: Any]] {
                let result = try await Self.collector(server, ["query", "--json"] + arguments)
                try #require(result.status == 0, "\(result.stderrLines)")
                return try result.stdout.split(separator: "\n").map {
                    try #require((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])
                }
            }
            let m2Reads = try await query(["--machine", "m2", "--event", "item.read"])
            #expect(m2Reads.count == all.filter { $0.0 == "m2" && $0.1.event == .itemRead }.count)
            #expect(m2Reads.allSatisfy { $0["machine"] as? String == "m2" && $0["event"] as? String == "item.read" })
            let m3User = try await query(["--user", "user-m3"])
            #expect(m3User.count == 500 && m3User.allSatisfy { $0["machine"] as? String == "m3" })
            let since = Date(timeIntervalSince1970: Self.base + 3600), until = Date(timeIntervalSince1970: Self.base + 7200)
            let window = try await query(["--outcome", "denied", "--item", "item-2", "--since", "2026-01-01T01:00:00Z",
                                          "--until", "2026-01-01T02:00:00Z"])
            let expected = all.filter {
                $0.1.outcome == .denied && $0.1.item == "item-2" && $0.1.time >= since && $0.1.time < until
            }
            #expect(window.count == expected.count && !expected.isEmpty, "\(window.count) vs \(expected.count)")
            #expect(Set(window.map { "\($0["machine"]!)#\($0["seq"]!)" }) == Set(expected.map { "\($0.0)#\($0.1.sequence)" }))
            let table = try await Self.collector(server, ["query", "--machine", "m1", "--limit", "3"])
            let lines = table.stdout.split(separator: "\n")
            #expect(lines.count == 4 && lines[0].hasPrefix("TIME") && lines[0].contains("MACHINE"), "\(table.stdout)")
        }
    }

    @Test("an edited record, a truncated tail and an unregistered key are each reported by verify (exit 6); a writable fleet.conf is refused")
    func verifyFindsTampering() async throws {
        let (server, machines) = try await Self.fleet(["m1", "m2", "m3"], records: 50)
        let stranger = try Machine("m4", database: server.database)
        defer {
            (machines + [stranger]).forEach { $0.remove() }
        }
        try await server.removing { server in
            try stranger.write(5)
            for machine in machines {
                let shipped = try await machine.ship()
                try #require(shipped.status == 0, "\(shipped.stdout)")
            }
            let intact = try await Self.collector(server, ["verify"])
            #expect(intact.status == 0 && intact.stdout.contains("none broken"), "\(intact.stdout)")

            try await server.psql("UPDATE records SET outcome = 'error' WHERE machine = 'm2' AND seq = 10")
            try await server.psql("DELETE FROM records WHERE machine = 'm3' AND seq > 47")
            // A machine whose key nobody registered.
            #expect(try await stranger.ship().status == 0)
            let broken = try await Self.collector(server, ["verify"])
            #expect(broken.status == 6, "\(broken.stdout)")
            let lines = broken.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("m1 ") && $0.contains("intact") }, "\(broken.stdout)")
            #expect(lines.contains { $0.hasPrefix("m2 ") && $0.contains("broken") && $0.contains("record 10") && $0.contains("altered") },
                    "\(broken.stdout)")
            #expect(lines.contains { $0.hasPrefix("m3 ") && $0.contains("broken") && $0.contains("48…50") && $0.contains("tail was removed") },
                    "\(broken.stdout)")
            #expect(lines.contains { $0.hasPrefix("m4 ") && $0.contains("not registered") }, "\(broken.stdout)")
            #expect(lines.last?.contains("3 of 4 trail(s) broken, on m2, m3, m4") == true, "\(broken.stdout)")

            // Rows the schema forbids (a constraint dropped first) are reported, never skipped:
            // a trail with no first record, and a seal with no signature.
            try await server.psql("""
                ALTER TABLE trails ALTER COLUMN first_seq DROP NOT NULL; UPDATE trails SET first_seq = NULL WHERE machine = 'm1';
                ALTER TABLE seals ALTER COLUMN signature DROP NOT NULL; UPDATE seals SET signature = NULL WHERE machine = 'm4'
                """)
            let malformed = try await Self.collector(server, ["verify"])
            let malformedLines = malformed.stdout.split(separator: "\n").map(String.init)
            #expect(malformed.status == 6, "\(malformed.stdout)")
            #expect(malformedLines.contains { $0.hasPrefix("m1 ") && $0.contains("broken") && $0.contains("malformed") },
                    "\(malformed.stdout)")
            #expect(malformedLines.contains { $0.hasPrefix("m4 ") && $0.contains("malformed") }, "\(malformed.stdout)")
            let json = try await Self.collector(server, ["verify", "--json", "--machine", "m2"])
            #expect(json.status == 6 && json.stdout.contains("\"status\":\"broken\""), "\(json.stdout)")

            // The configuration decides where trails go: only root may be able to change it.
            chmod(machines[0].config, 0o666)
            let writable = try await machines[0].ship()
            #expect(writable.status == 11 && writable.stdout.contains("owned by root and writable by root alone"), "\(writable.stdout)")
            chmod(machines[0].config, 0o644)
            chown(machines[0].config, 65534, 65534)
            let foreign = try await machines[0].ship()
            #expect(foreign.status == 11 && foreign.stdout.contains("owned by root"), "\(foreign.stdout)")
        }
    }

    @Test("touchgated ships with its own configuration: a user's own trail, root's every trail, and every ship-every seconds by itself; a client cannot name another")
    func daemonShips() async throws {
        try #require(getuid() == 0, "this test runs clients as two users and a root-owned fleet.conf: run the tests as root")
        let server = try await PostgresRig()
        try await server.removing { server in
            let initialised = try await Self.collector(server, ["init"])
            try #require(initialised.status == 0, "\(initialised.stderrLines)")
            let rig = try await DaemonRig()
            let config = rig.home.path("fleet.conf")
            func configure(every seconds: Int) throws {
                try "database = \(server.database)\nmachine = ws1\nship-every = \(seconds)\n"
                    .write(toFile: config, atomically: true, encoding: .utf8)
                chmod(config, 0o644)
            }
            rig.daemonArguments = ["--fleet-config", config]
            try await rig.start()
            let other = DaemonRig.otherUID
            // Nobody has a store yet: nothing to ship, and no store is made for asking.
            try configure(every: 3600)
            let none = try await rig.run(["audit", "ship"], as: other)
            #expect(none.status == 10 && none.stderrLines.joined().contains("nothing to ship"), "\(none.status) \(none.stderrLines)")
            #expect(!FileManager.default.fileExists(atPath: rig.stateDirectory + "/users/\(other)/touchgate.sqlite"))
            try FileManager.default.removeItem(atPath: config)
            try await rig.initialize()
            try await rig.initialize(as: other)

            // No configuration yet: said so, nothing shipped.
            let missing = try await rig.run(["audit", "ship"], as: other)
            #expect(missing.status != 0 && missing.stderrLines.joined().contains("no fleet configuration"),
                    "\(missing.status) \(missing.stderrLines)")

            try configure(every: 3600)
            // A client naming another configuration is refused: the daemon's decides.
            let named = try await rig.run(["audit", "ship", "--config", config], as: other)
            #expect(named.status == 64 && named.stderrLines.joined().contains("drop --config"), "\(named.stderrLines)")
            #expect(try await server.psql("SELECT count(*) FROM records") == "0")

            // A user ships their own trail only.
            let own = try await rig.run(["audit", "ship", "--json"], as: other)
            #expect(own.status == 0, "\(own.stdout) \(own.stderrLines)\n\(rig.daemonLog)")
            let ownLines = own.stdout.split(separator: "\n")
            #expect(ownLines.count == 1 && own.json?["user"] as? String == "nobody" && own.json?["machine"] as? String == "ws1",
                    "\(own.stdout)")
            let shippedByOther = try #require(own.json?["shipped"] as? Int)
            #expect(shippedByOther > 0)
            #expect(try await server.psql("SELECT string_agg(DISTINCT vault_user, ',') FROM records") == "nobody")
            #expect(try await server.psql("SELECT count(*) FROM records") == String(shippedByOther))

            // Root ships every user's trail: root's now, nobody's has nothing new.
            let all = try await rig.run(["audit", "ship", "--json"])
            #expect(all.status == 0, "\(all.stdout) \(all.stderrLines)")
            let reports = try all.stdout.split(separator: "\n").map {
                try #require((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])
            }
            #expect(Set(reports.compactMap { $0["user"] as? String }) == ["root", "nobody"], "\(all.stdout)")
            #expect(reports.first { $0["user"] as? String == "nobody" }?["shipped"] as? Int == 0, "\(all.stdout)")
            #expect(try await server.psql("SELECT count(DISTINCT trail) FROM records") == "2")

            // One key signs every trail of the daemon: registered once, both verify.
            let key = try await rig.run(["audit", "public-key"], as: other)
            let keyFile = rig.home.path("ws1.pub")
            try key.stdout.write(toFile: keyFile, atomically: true, encoding: .utf8)
            try await Self.register(server, machine: "ws1", publicKeyFile: keyFile)
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 0 && verified.stdout.contains("2 trail(s) of 1 machine(s) verified: none broken"),
                    "\(verified.stdout)")

            // Every second, by itself: a record written now reaches the collector unasked.
            rig.stop()
            try configure(every: 1)
            try await rig.start()
            let before = try await server.psql("SELECT max(seq) FROM records WHERE vault_user = 'nobody'")
            let locked = try await rig.run(["lock"], as: other)
            #expect(locked.status == 0, "\(locked.stderrLines)")
            var after = before
            for _ in 0..<300 where after == before {
                try await Task.sleep(for: .milliseconds(100))
                after = try await server.psql("SELECT max(seq) FROM records WHERE vault_user = 'nobody'")
            }
            #expect((Int(after) ?? 0) > (Int(before) ?? 0), "nothing shipped by itself:\n\(rig.daemonLog)")
            // The round logs once every trail of it is shipped: nobody's records reach the
            // collector before root's trail is done, so the line may follow them a moment later.
            for _ in 0..<100 where !rig.daemonLog.contains("fleet: shipped") {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(rig.daemonLog.contains("fleet: shipped"), "\(rig.daemonLog)")

            // The administrator replaces the whole log with a fresh one: the daemon's next
            // rounds refuse it, log why, and write it once to each trail (not every round).
            try await server.psql("""
                TRUNCATE log_entries, log_nodes, checkpoints; UPDATE fleet_log SET origin = 'touchgate.fleet/replaced'
                """)
            #expect(try await rig.run(["lock"], as: other).status == 0)
            for _ in 0..<100 where !rig.daemonLog.contains("it was replaced") {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(rig.daemonLog.contains("fleet: ") && rig.daemonLog.contains("it was replaced")
                    && rig.daemonLog.contains("nothing was marked shipped"), "\(rig.logTail)")
            try await Task.sleep(for: .seconds(3))
            let refusals = try await rig.run(["audit", "show", "--event", "audit.ship", "--json"], as: other)
            #expect(refusals.stdout.split(separator: "\n").filter { $0.contains("shipment to the fleet collector refused") }.count == 1,
                    "\(refusals.stdout) \(refusals.stderrLines)")

            // Accepting the new log is root's decision, and then shipping goes on.
            let notRoot = try await rig.run(["audit", "ship", "--new-log"], as: other)
            #expect(notRoot.status == 11 && notRoot.stderrLines.joined().contains("only root"), "\(notRoot.stderrLines)")
            let accepted = try await rig.run(["audit", "ship", "--new-log", "--json"])
            #expect(accepted.status == 0, "\(accepted.stdout) \(accepted.stderrLines)")
            #expect(try await rig.run(["audit", "ship"], as: other).status == 0)

            // The collector away: the daemon logs why, and the records stay queued.
            try await server.stop()
            #expect(try await rig.run(["lock"], as: other).status == 0)
            for _ in 0..<100 where !rig.daemonLog.contains("stay queued") {
                try await Task.sleep(for: .milliseconds(100))
            }
            // Whichever trail goes first: a round of its own finds no server ("cannot connect"),
            // a shipment right after `lock` may find its kept connection closed under it.
            // (libpq's messages span lines: the two parts are looked for in the whole log.)
            let log = rig.daemonLog
            #expect(log.contains("stay queued")
                    && (log.contains("fleet: root's trail: outage: cannot connect") || log.contains("server closed the connection")),
                    "\(log)")
            rig.stop()
        }
    }

    @Test("over TLS: a machine ships with verify-full and the client certificate fleet.conf names; without the certificate, or trusting another CA, it is refused (69) and its records stay queued")
    func shipsOverTLSWithAClientCertificate() async throws {
        let server = try await PostgresRig()
        try await server.removing { server in
            let pki = try await TestPKI(in: server.directory + "/pki", client: "postgres")
            try await server.requireTLS(pki)
            let initialised = try await Self.collector(server, ["init"], local: true)
            try #require(initialised.status == 0, "\(initialised.stderrLines)")
            let tls = "sslmode = verify-full\nsslrootcert = \(pki.path("ca.crt"))\nsslcert = \(pki.path("client.crt"))\n"
                + "sslkey = \(pki.path("client.key"))\n"
            let machine = try Machine("t1", database: server.database, settings: tls)
            defer { machine.remove() }
            try machine.write(20)

            let bare = machine.home + "/bare.conf"
            try "database = \(server.database)\nmachine = t1\nsslmode = verify-full\nsslrootcert = \(pki.path("ca.crt"))\n"
                .write(toFile: bare, atomically: true, encoding: .utf8)
            let withoutCertificate = try await machine.ship(config: bare)
            #expect(withoutCertificate.status == 69 && withoutCertificate.stdout.contains("certificate"),
                    "\(withoutCertificate.stdout)")
            let stranger = machine.home + "/stranger.conf"
            try tls.replacingOccurrences(of: pki.path("ca.crt"), with: pki.path("other-ca.crt"))
                .appending("database = \(server.database)\nmachine = t1\n")
                .write(toFile: stranger, atomically: true, encoding: .utf8)
            let otherCA = try await machine.ship(config: stranger)
            #expect(otherCA.status == 69 && otherCA.stdout.contains("certificate verify failed"), "\(otherCA.stdout)")
            #expect(try await server.psql("SELECT count(*) FROM records") == "0")

            let shipped = try await machine.ship()
            #expect(shipped.status == 0, "\(shipped.stdout) \(shipped.stderrLines)")
            let count = machine.written.withLock { $0.count }
            #expect(try await Self.collected(server)["t1"] == [count, 1, count, count])
            // The server saw it as TLS, authorised by the certificate (cert authentication).
            #expect(server.log.contains("application_name=touchgate SSL enabled"), "\(server.log.suffix(2000))")
            try await Self.register(server, machine: "t1", publicKeyFile: machine.publicKeyFile, local: true)
            let verified = try await Self.collector(server, ["verify"], local: true)
            #expect(verified.status == 0 && verified.stdout.contains("none broken"), "\(verified.stdout)")
        }
    }

    @Test("the local cursor moved forward with sqlite3 (so records are never shipped) is caught by the collector's verify as a gap")
    func skippedRecordsAreReportedCentrally() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"), "apt-get install sqlite3")
        let (server, machines) = try await Self.fleet(["m1"], records: 30)
        let machine = machines[0]
        defer { machine.remove() }
        try await server.removing { server in
            #expect(try await machine.ship().status == 0)
            try machine.write(20)
            // Records 31…40 are to vanish from the fleet's view: the cursor jumps past them.
            let database = machine.home + "/data/touchgate/touchgate.sqlite"
            let edited = try await runProgram("/usr/bin/sqlite3", [database, "UPDATE auditShipped SET seq = seq + 10"])
            try #require(edited.status == 0, "\(edited.stderr)")
            #expect(try await machine.ship().status == 0)
            #expect(try await Self.collected(server)["m1"] == [40, 1, 50, 40])
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 6 && verified.stdout.contains("records 31…40 are missing"), "\(verified.stdout)")
        }
    }

    @Test("the same machine shipping from two processes at once: both succeed, every record is stored once, the trail verifies")
    func oneTrailShippedTwiceAtOnce() async throws {
        let (server, machines) = try await Self.fleet(["m1"], records: 300)
        let machine = machines[0]
        defer { machine.remove() }
        try await server.removing { server in
            async let first = machine.ship()
            async let second = machine.ship()
            let results = try await [first, second]
            for result in results { #expect(result.status == 0, "\(result.stdout) \(result.stderrLines)") }
            #expect(try await Self.collected(server)["m1"] == [300, 1, 300, 300])
            let verified = try await Self.collector(server, ["verify"])
            #expect(verified.status == 0 && verified.stdout.contains("none broken"), "\(verified.stdout)")
        }
    }
}
