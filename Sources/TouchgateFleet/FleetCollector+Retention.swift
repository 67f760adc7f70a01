import FoundationEssentials
import Glibc
import TouchgatePolicy
import TouchgateShipping
import TouchgateVault
public import TouchgateAPI
import TouchgateBasics

/// One month taken out of the database by ``FleetCollector/archive(before:directory:)``.
public struct FleetArchiveReport: Codable, Sendable {
    /// `YYYY-MM`.
    public var month: String
    /// The records file and the manifest beside it.
    public var file: String
    public var manifest: String
    public var rows: Int64
    public var trails: Int
    /// SHA-256 of the records file, hex.
    public var sha256: String
}

/// What `verify --archive` found of one archived month.
public struct FleetArchiveCheck: Codable, Sendable {
    public var month: String
    public var rows: Int64
    public var status: FleetTrailReport.Status
    public var problem: String?
}

/// An archived month's manifest (`archive-YYYY-MM.json` beside `records-YYYY-MM.jsonl`).
struct ArchiveManifest: Codable {
    struct Trail: Codable {
        var machine: String
        var trail: String
        var first: Int64
        var through: Int64
        /// The public link of record `through`, hex.
        var chain: String
    }

    var month: String
    var file: String
    var rows: Int64
    var sha256: String
    var trails: [Trail]
    /// The log's tree head when the month was archived (a checkpoint note).
    var log: String
}

/// One archived record: every column as stored, bytes in hex.
struct ArchivedRecord: Codable {
    var machine: String
    var trail: String
    var seq: Int64
    var unixTime: Double
    var bootTime: Double
    var bootID: String
    var uid: Int64
    var login: String
    var vaultUser: String?
    var event: String
    var item: String?
    var outcome: String
    var reason: String
    var prevMAC: String
    var mac: String
    var prevChain: String?
    var chain: String?

    enum CodingKeys: String, CodingKey {
        case machine, trail, seq, uid, login, event, item, outcome, reason, mac, chain
        case unixTime = "unix_time", bootTime = "boot_time", bootID = "boot_id", vaultUser = "vault_user"
        case prevMAC = "prev_mac", prevChain = "prev_chain"
    }

    /// The audit record it is, for the chain verifier; nil when a field is malformed.
    var record: AuditRecord? {
        guard let uid = UInt32(exactly: uid), let previousMAC = Hex.decode(prevMAC), let mac = Hex.decode(mac) else {
            return nil
        }
        return AuditRecord(sequence: seq, unixTime: unixTime, bootTime: bootTime, bootID: bootID, uid: uid, loginName: login,
                           vaultUser: vaultUser, event: AuditEvent(stored: event), item: item,
                           outcome: AuditOutcome(stored: outcome), reason: reason, previousMAC: previousMAC, mac: mac,
                           previousChain: prevChain.flatMap(Hex.decode), chain: chain.flatMap(Hex.decode))
    }
}

extension FleetCollector {
    /// Makes the monthly partitions of `records` that do not exist yet, from the oldest month
    /// held in `records_other` (at most ten years back) or last month to three months ahead,
    /// moving those records into them (`init` and `publish` do, so a timer running `publish`
    /// keeps them ahead); returns how many it made.
    @discardableResult
    public func keepMonths() throws(ServiceError) -> Int {
        Int(try connection.execute("SELECT touchgate_keep_months()").scalar ?? "") ?? 0
    }

    /// Takes every month before `floor` (`YYYY-MM`) out of the database: for each, oldest
    /// first, its records go to `records-YYYY-MM.jsonl` in `directory` (one JSON object a
    /// line, by machine, trail and sequence) with `archive-YYYY-MM.json` beside it (the
    /// file's SHA-256, each trail's first and last record archived with its public link, the
    /// log's tree head), the partition is dropped, and `archived_trails` takes each trail up
    /// after its last record archived, all in one transaction per month.
    ///
    /// A month is archived only whole and only in order: every record of it must be named by
    /// a batch head in the log (shipped and logged), and no trail may hold an earlier record
    /// in a later month (a clock set back): otherwise nothing of it is touched and the error
    /// says which trail. Log entries and nodes stay: proofs over the whole log still verify.
    public func archive(before floor: String, directory: String) throws(ServiceError) -> [FleetArchiveReport] {
        guard floor.count == 7, let floorDate = try? Date(floor + "-01T00:00:00Z", strategy: .iso8601) else {
            throw ServiceError(.usage, "the retention floor is a month, YYYY-MM, not \(floor)")
        }
        let months = try connection.execute("""
            SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'records'::regclass AND c.relname ~ '^records_[0-9]{4}_[0-9]{2}$' ORDER BY c.relname
            """).rows.compactMap { $0[0] }
        var reports: [FleetArchiveReport] = []
        for partition in months {
            let month = partition.dropFirst("records_".count).replacing("_", with: "-")
            guard let start = try? Date(month + "-01T00:00:00Z", strategy: .iso8601), start < floorDate else { continue }
            reports.append(try archive(partition: partition, month: String(month), directory: directory))
        }
        return reports
    }

    private func archive(partition: String, month: String, directory: String) throws(ServiceError) -> FleetArchiveReport {
        let file = "records-\(month).jsonl"
        let manifestFile = "archive-\(month).json"
        let quoted = "\"\(partition)\""
        return try connection.transaction { () throws(ServiceError) -> FleetArchiveReport in
            try connection.execute("LOCK TABLE \(quoted) IN EXCLUSIVE MODE")
            if let row = try connection.execute("""
                SELECT p.machine, p.trail, max(p.seq) FROM \(quoted) p GROUP BY p.machine, p.trail
                HAVING max(p.seq) > coalesce((SELECT max(e.last_seq) FROM log_entries e WHERE e.kind IN ('batch', 'shipment')
                                              AND e.machine = p.machine AND e.trail = p.trail), 0)
                LIMIT 1
                """).rows.first {
                throw ServiceError(.retention, "month \(month) cannot be archived yet: machine \(row[0] ?? "?")'s records up "
                                   + "to \(row[2] ?? "?") are not all named by a batch head in the log (a shipment under "
                                   + "way or cut short); archive it after the machine ships again")
            }
            if let row = try connection.execute("""
                SELECT p.machine FROM (SELECT machine, trail, max(seq) AS last FROM \(quoted) GROUP BY machine, trail) p
                WHERE EXISTS (SELECT 1 FROM records r WHERE r.machine = p.machine AND r.trail = p.trail AND r.seq < p.last
                              AND r.tableoid <> '\(quoted)'::regclass)
                LIMIT 1
                """).rows.first {
                throw ServiceError(.retention, "month \(month) cannot be archived alone: machine \(row[0] ?? "?") has "
                                   + "earlier records in a later month (its clock went back); archive up to that month")
            }
            // The records, streamed to the file in order, hashed as written; each trail's ends.
            var trails: [ArchiveManifest.Trail] = []
            var digest = SHA256Stream()
            var rows: Int64 = 0
            let path = directory + "/" + file
            let output = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard output >= 0 else {
                throw ServiceError(.usage, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            defer { Glibc.close(output) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try connection.execute("""
                DECLARE archive_walk NO SCROLL CURSOR FOR
                SELECT seq, unix_time, boot_time, boot_id, uid, login, vault_user, event, item, outcome,
                       reason, prev_mac, mac, prev_chain, chain, machine, trail
                FROM \(quoted) ORDER BY machine, trail, seq
                """)
            while true {
                var fetched = 0
                try connection.query("FETCH \(Self.fetchSize) FROM archive_walk") { result throws(ServiceError) in
                    fetched = result.count
                    var chunk: [UInt8] = []
                    for row in 0..<result.count {
                        guard let stored = Self.record(result, row), let machine = result.string(row, 15),
                              let trail = result.bytes(row, 16) else {
                            throw ServiceError(.auditBroken, "a record of month \(month) is malformed: the database was edited; "
                                               + "nothing was archived")
                        }
                        let archived = ArchivedRecord(
                            machine: machine, trail: Hex.encode(trail), seq: stored.sequence, unixTime: stored.unixTime,
                            bootTime: stored.bootTime, bootID: stored.bootID, uid: Int64(stored.uid), login: stored.loginName,
                            vaultUser: stored.vaultUser, event: stored.event.rawValue, item: stored.item,
                            outcome: stored.outcome.rawValue, reason: stored.reason, prevMAC: Hex.encode(stored.previousMAC),
                            mac: Hex.encode(stored.mac), prevChain: stored.previousChain.map(Hex.encode),
                            chain: stored.chain.map(Hex.encode))
                        guard let line = try? encoder.encode(archived), let chain = stored.chain else {
                            throw ServiceError(.auditBroken, "record \(stored.sequence) of machine \(machine) in month \(month) "
                                               + "has no public link: it cannot be archived")
                        }
                        chunk += Array(line) + [0x0a]
                        if let last = trails.last, last.machine == machine, last.trail == archived.trail {
                            trails[trails.count - 1].through = stored.sequence
                            trails[trails.count - 1].chain = Hex.encode(chain)
                        } else {
                            trails.append(.init(machine: machine, trail: archived.trail, first: stored.sequence,
                                                through: stored.sequence, chain: Hex.encode(chain)))
                        }
                        rows += 1
                    }
                    digest.update(chunk)
                    try Self.writeAll(output, chunk, path: path)
                }
                if fetched == 0 { break }
            }
            try connection.execute("CLOSE archive_walk")
            guard fsync(output) == 0 else { throw ServiceError(.usage, "cannot write \(path): \(String(cString: strerror(errno)))") }
            let sha256 = Hex.encode(digest.finish())
            let head = try FleetLogStore(connection).head()
            let manifest = ArchiveManifest(month: month, file: file, rows: rows, sha256: sha256, trails: trails,
                                           log: head.body)
            let manifestEncoder = JSONEncoder()
            manifestEncoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            guard let manifestText = (try? manifestEncoder.encode(manifest)).map({ String(decoding: $0, as: UTF8.self) + "\n" })
            else { throw ServiceError(.error, "cannot encode the archive's manifest") }
            do {
                try Data(manifestText.utf8).write(to: URL(fileURLWithPath: directory + "/" + manifestFile), options: .atomic)
            } catch {
                throw ServiceError(.usage, "cannot write \(directory)/\(manifestFile): \(error)")
            }
            for trail in trails {
                try connection.execute("""
                    INSERT INTO archived_trails (machine, trail, through_seq, chain, month) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (machine, trail) DO UPDATE SET through_seq = excluded.through_seq, chain = excluded.chain,
                        month = excluded.month
                    """, [trail.machine, "\\x" + trail.trail, String(trail.through), "\\x" + trail.chain, month + "-01"])
            }
            try connection.execute("""
                INSERT INTO archives (month, file, rows, sha256, manifest) VALUES ($1, $2, $3, $4, $5)
                """, [month + "-01", file, String(rows), "\\x" + sha256, manifestText])
            try connection.execute("ALTER TABLE records DETACH PARTITION \(quoted)")
            try connection.execute("DROP TABLE \(quoted)")
            return FleetArchiveReport(month: month, file: path, manifest: directory + "/" + manifestFile, rows: rows,
                                      trails: trails.count, sha256: sha256)
        }
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(ServiceError) {
        var written = 0
        while written < bytes.count {
            let wrote = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard wrote > 0 else { throw ServiceError(.usage, "cannot write \(path): \(String(cString: strerror(errno)))") }
            written += wrote
        }
    }

    /// Checks each archived month in `directory` against the database (`verify --archive`):
    /// the file is the one archived (its SHA-256, as `archives` holds it), its records form
    /// each trail's unbroken public chain from where the previous month left it (or from the
    /// trail's first record), every batch head of the log that ends inside it names the
    /// record there, and each trail ends where the manifest, and for its newest archive
    /// `archived_trails`, say verify takes it up. Months the database says were archived
    /// and `directory` lacks are broken: records deleted, called archived.
    public func checkArchives(in directory: String) throws(ServiceError) -> [FleetArchiveCheck] {
        var checks: [FleetArchiveCheck] = []
        var links: [String: (through: Int64, chain: [UInt8])] = [:]
        let archived = try connection.execute("SELECT to_char(month, 'YYYY-MM'), file, rows, sha256 FROM archives ORDER BY month").rows
        let keys = Dictionary(try connection.execute("SELECT machine, trail, public_key, first_seq FROM trails").rows.compactMap {
            row -> (String, ([UInt8], Int64))? in
            guard let machine = row[0], let trail = Bytea.bytes(row[1]), let key = Bytea.bytes(row[2]),
                  let first = row[3].flatMap({ Int64($0) }) else { return nil }
            return (machine + " " + Hex.encode(trail), (key, first))
        }, uniquingKeysWith: { first, _ in first })
        for row in archived {
            let month = row[0] ?? "?"
            var check = FleetArchiveCheck(month: month, rows: Int64(row[2] ?? "") ?? 0, status: .intact, problem: nil)
            func broken(_ problem: String) {
                if check.status == .intact {
                    check.status = .broken
                    check.problem = problem
                }
            }
            let path = directory + "/" + (row[1] ?? "")
            let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                broken(errno == ENOENT
                       ? "the database says month \(month) was archived to \(row[1] ?? "?"), which \(directory) lacks: "
                         + "its records were deleted, or the archive lost"
                       : "cannot read \(path): \(String(cString: strerror(errno)))")
                checks.append(check)
                continue
            }
            defer { Glibc.close(descriptor) }
            var verifier: AuditChainVerifier?
            var current = ""
            var logged: [LoggedShipment] = []
            var count: Int64 = 0
            let decoder = JSONDecoder()
            // One record a line, checked as it is read.
            func take(_ line: ArraySlice<UInt8>) throws(ServiceError) {
                guard check.status == .intact else { return }
                guard let archived = try? decoder.decode(ArchivedRecord.self, from: Data(line)), let record = archived.record,
                      let trail = Hex.decode(archived.trail), let (key, first) = keys[archived.machine + " " + archived.trail]
                else {
                    return broken("line \(count + 1) of \(row[1] ?? "?") is not a record of a trail the collector knows")
                }
                let name = archived.machine + " " + archived.trail
                if name != current {
                    current = name
                    if let (through, chain) = links[name] {
                        verifier = AuditChainVerifier(publicKey: key, after: through, chain: chain)
                    } else {
                        verifier = AuditChainVerifier(publicKey: key)
                        if record.sequence != first {
                            return broken("machine \(archived.machine)'s trail starts at record \(first), its archive at "
                                          + "\(record.sequence): records \(first)…\(record.sequence - 1) are in no archive")
                        }
                    }
                    logged = try loggedShipments(machine: archived.machine, trail: trail)
                }
                if let problem = verifier?.add(record, trail: trail) {
                    return broken("machine \(archived.machine): \(problem.reason)")
                }
                for shipment in logged where shipment.shipment.last == record.sequence && shipment.shipment.chain != record.chain {
                    broken("machine \(archived.machine): record \(record.sequence) is not the one the log's entry "
                           + "\(shipment.leaf) names: rewritten")
                }
                links[name] = (record.sequence, record.chain ?? [])
                count += 1
            }
            // Read in chunks, hashed as they come: a month of a large fleet is gigabytes, and
            // memory stays that of one chunk and one line.
            var digest = SHA256Stream()
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            var partial: [UInt8] = []
            var unreadable: String?
            while true {
                let got = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if got < 0 && errno == EINTR { continue }
                if got < 0 { unreadable = String(cString: strerror(errno)); break }
                if got == 0 { break }
                let bytes = chunk[..<got]
                digest.update(Array(bytes))
                var start = bytes.startIndex
                while let newline = bytes[start...].firstIndex(of: 0x0a) {
                    if partial.isEmpty {
                        try take(bytes[start..<newline])
                    } else {
                        partial += bytes[start..<newline]
                        try take(partial[...])
                        partial.removeAll(keepingCapacity: true)
                    }
                    start = newline + 1
                }
                partial += bytes[start...]
            }
            if !partial.isEmpty { try take(partial[...]) }
            // A file that is not the one archived says so first, whatever its lines hold.
            if let unreadable {
                check.status = .broken
                check.problem = "cannot read \(path): \(unreadable)"
            } else if "\\x" + Hex.encode(digest.finish()) != row[3] {
                check.status = .broken
                check.problem = "\(row[1] ?? "?") is not the file archived (its SHA-256 differs from the one the database keeps)"
            }
            if check.status == .intact, count != check.rows {
                broken("\(row[1] ?? "?") holds \(count) records, the database says \(check.rows) were archived")
            }
            checks.append(check)
        }
        // Where verify takes each trail up must be where its archives end.
        for row in try connection.execute("SELECT machine, trail, through_seq, chain FROM archived_trails").rows {
            guard let machine = row[0], let trail = Bytea.bytes(row[1]), let through = row[2].flatMap({ Int64($0) }),
                  let chain = Bytea.bytes(row[3]) else { continue }
            let name = machine + " " + Hex.encode(trail)
            if links[name].map({ $0.through != through || $0.chain != chain }) ?? true,
               let index = checks.indices.last {
                checks[index].status = .broken
                checks[index].problem = checks[index].problem ?? "machine \(machine)'s trail is taken up after record "
                    + "\(through), where no archive ends: records were deleted, called archived"
            }
        }
        return checks
    }
}
