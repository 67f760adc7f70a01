public import FoundationEssentials
import TouchgatePolicy
public import TouchgateShipping
import TouchgateVault
public import TouchgateAPI

/// The central side of fleet collection (`touchgate-collector`): applies the schema,
/// registers machines' public keys, verifies every machine's trails in the database
/// against them, and answers queries. Holds one connection; blocking; close it when done.
public final class FleetCollector {
    let connection: PostgresConnection

    /// Connects to `database` (a libpq connection string or URL; empty: libpq's `PG*`
    /// environment variables and defaults).
    /// - Throws: ``ServiceError`` `collector-unavailable`.
    public init(database: String) throws(ServiceError) {
        connection = try PostgresConnection(database: database)
    }

    /// Closes the connection.
    public func close() { connection.close() }

    /// Applies the migrations the database lacks; returns the versions before and after.
    public func initialize() throws(ServiceError) -> (before: Int, after: Int) {
        (try FleetSchema.migrate(connection), FleetSchema.current)
    }

    /// Registers `publicKey` as one that signs `machine`'s trails, through a statement the
    /// administrator's `enrollment` key signs, appended to the fleet log: a key swap is then
    /// visible to every auditor and attributable. False when it already was registered.
    public func register(machine: String, publicKey: [UInt8], enrollment: NoteSigner,
                         now: Date = Date()) throws(ServiceError) -> Bool {
        if let problem = StoredText.problem(withName: machine, what: "machine") { throw ServiceError(.usage, problem) }
        return try connection.transaction { () throws(ServiceError) -> Bool in
            let held = try connection.execute("""
                SELECT 1 FROM machine_keys WHERE machine = $1 AND public_key = $2 AND leaf IS NOT NULL
                """, [machine, Bytea.text(publicKey)])
            if !held.rows.isEmpty { return false }
            let entry = FleetEntry.register(machine: machine, publicKey: publicKey,
                                            time: Int64(now.timeIntervalSince1970), enrollment: enrollment)
            let leaf = try FleetLogStore(connection).append(registration: entry)
            try connection.execute("""
                INSERT INTO machine_keys (machine, public_key, leaf) VALUES ($1, $2, $3)
                ON CONFLICT (machine, public_key) DO UPDATE SET leaf = excluded.leaf
                """, [machine, Bytea.text(publicKey), String(leaf)])
            return true
        }
    }

    // MARK: Verifying

    /// How many records one FETCH brings while verifying.
    static let fetchSize = 20_000

    /// Verifies the fleet log, then every trail of every machine (or of `machine`),
    /// calling `report` with each trail as it is done, ordered by machine; returns them
    /// all and the log's report.
    ///
    /// The log (``verifyLog(_:)``) is recomputed from its entries and checked against
    /// every checkpoint, the witnesses' cosignatures and the checkpoints the auditor holds.
    /// For each trail: its seal's key must be registered for the machine (by the
    /// enrollment key, when `trust` names it); the stored records, in sequence order from
    /// the first one shipped, must form an unbroken public chain (``AuditChainVerifier``);
    /// every stored seal must be signed by that key and name the link of the record at
    /// its sequence; every record must be in a shipment the log names, and every shipment
    /// the log names must be there, the links matching; and the newest seal must name the
    /// newest record (records after it are reported as `unsealed`: a shipment under way).
    /// A trail the log names that the collector no longer holds is reported broken.
    /// Memory does not grow with the number of records.
    public func verify(machine: String? = nil, trust: FleetTrust = FleetTrust(),
                       report: (FleetTrailReport) -> Void = { _ in })
        throws(ServiceError) -> (trails: [FleetTrailReport], log: FleetLogReport) {
        let (log, logged) = try verifyLog(trust, machine: machine)
        var registered: [String: [[UInt8]]] = [:]
        if trust.enrollment != nil {
            for (name, keys) in logged { registered[name] = Array(keys) }
        } else {
            for row in try connection.execute("SELECT machine, public_key FROM machine_keys").rows {
                if let name = row[0], let key = Bytea.bytes(row[1]) { registered[name, default: []].append(key) }
            }
        }
        let trails = try connection.execute("""
            SELECT machine, trail, public_key, first_seq FROM trails WHERE $1::text IS NULL OR machine = $1
            ORDER BY machine, trail
            """, [machine]).rows
        // Where archived trails are taken up (`archive`): the last record archived and its link.
        var anchors: [String: (through: Int64, chain: [UInt8])] = [:]
        for row in try connection.execute("""
            SELECT machine, trail, through_seq, chain FROM archived_trails WHERE $1::text IS NULL OR machine = $1
            """, [machine]).rows {
            if let name = row[0], let trail = Bytea.bytes(row[1]), let through = row[2].flatMap({ Int64($0) }),
               let chain = Bytea.bytes(row[3]) {
                anchors[name + " " + Hex.encode(trail)] = (through, chain)
            }
        }
        var reports: [FleetTrailReport] = []
        for row in trails {
            let result: FleetTrailReport
            if let name = row[0], let trail = Bytea.bytes(row[1]), let key = Bytea.bytes(row[2]),
               let firstShipped = row[3].flatMap({ Int64($0) }) {
                result = try verify(machine: name, trail: trail, key: key, firstShipped: firstShipped,
                                    registered: registered[name] ?? [],
                                    shipments: try loggedShipments(machine: name, trail: trail),
                                    archived: anchors[name + " " + Hex.encode(trail)])
            } else {
                // Never skipped: a row the schema forbids means the table itself was altered.
                result = FleetTrailReport(machine: row[0] ?? "?", trail: Bytea.bytes(row[1]).map(Hex.encode) ?? "?", records: 0, first: nil, last: nil,
                                          signedThrough: nil, status: .broken,
                                          problem: "the collector's row for this trail is malformed (a field is missing): "
                                              + "the database was edited")
            }
            report(result)
            reports.append(result)
        }
        for vanished in try vanishedTrails(machine: machine) {
            report(vanished)
            reports.append(vanished)
        }
        return (reports, log)
    }

    private func verify(machine: String, trail: [UInt8], key: [UInt8], firstShipped shippedFirst: Int64,
                        registered: [[UInt8]], shipments allShipments: [LoggedShipment],
                        archived: (through: Int64, chain: [UInt8])?) throws(ServiceError) -> FleetTrailReport {
        let trailText = Bytea.text(trail)
        var result = FleetTrailReport(machine: machine, trail: Hex.encode(trail), records: 0, first: nil, last: nil,
                                      signedThrough: nil, status: .intact, problem: nil)
        result.archivedThrough = archived?.through
        // Records up to the last one archived left the database (`verify --archive` checks
        // them); the chain is taken up after it, and shipments wholly before it are archived.
        let firstShipped = archived.map { $0.through + 1 } ?? shippedFirst
        let shipments = allShipments.filter { $0.shipment.last >= firstShipped }
        func broken(_ sequence: Int64, _ reason: String) -> FleetTrailReport {
            var broken = result
            broken.status = .broken
            broken.problem = "record \(sequence): \(reason)"
            return broken
        }
        // Seals: few (one per shipment), so held in memory, ordered by sequence.
        var seals: [AuditSeal] = []
        for row in try connection.execute("""
            SELECT seq, chain, public_key, signature FROM seals WHERE machine = $1 AND trail = $2 ORDER BY seq
            """, [machine, trailText]).rows {
            guard let sequence = row[0].flatMap({ Int64($0) }), let chain = Bytea.bytes(row[1]),
                  let sealKey = Bytea.bytes(row[2]), let signature = Bytea.bytes(row[3]) else {
                return broken(Int64(row[0] ?? "") ?? 0, "a seal's row is malformed (a field is missing): the database was edited")
            }
            seals.append(AuditSeal(trail: trail, sequence: sequence, chain: chain, publicKey: sealKey, signature: signature))
        }
        result.signedThrough = seals.last?.sequence
        guard registered.contains(key) else {
            return broken(firstShipped, "signed by key \(Hex.encode(key)), which is not registered for machine "
                          + "\(machine)" + (registered.isEmpty && shipments.isEmpty ? "" : " by the enrollment key")
                          + " (touchgate-collector register)")
        }
        seals.removeAll { $0.sequence < firstShipped }
        for seal in seals where !seal.isSigned(by: key) {
            return broken(seal.sequence, "the seal naming it is not signed by the registered key: forged or edited")
        }
        if archived != nil, shipments.isEmpty {
            // Wholly archived (or nothing shipped since): nothing is left here to check.
            result.signedThrough = seals.last?.sequence
            return result
        }
        guard let firstLogged = shipments.map(\.shipment.first).min() else {
            return broken(firstShipped, "no shipment of this trail is in the fleet log: its records were written outside "
                          + "a shipment, or before the collector had a log (schema 1)")
        }
        if let foreign = shipments.first(where: { $0.shipment.publicKey != key }) {
            return broken(foreign.shipment.last, "the fleet log's entry \(foreign.leaf) names key "
                          + "\(Hex.encode(foreign.shipment.publicKey)) for this trail, not the trail's key: replaced")
        }
        if let forged = shipments.first(where: { !$0.signed }) {
            return broken(forged.shipment.first, "the fleet log's entry \(forged.leaf), a batch head of records "
                          + "\(forged.shipment.first)…\(forged.shipment.last), is not signed by the key it names: forged "
                          + "(by the database's administrator or with this machine's credentials)")
        }
        if archived == nil, firstLogged != firstShipped {
            return broken(firstLogged, "the fleet log's first shipment of this trail starts at record \(firstLogged), "
                          + "the collector's row says \(firstShipped): the first records were deleted or the row edited")
        }
        var pendingShipments = shipments[...]
        var verifier = archived.map { AuditChainVerifier(publicKey: key, after: $0.through, chain: $0.chain) }
            ?? AuditChainVerifier(publicKey: key)
        var pendingSeals = seals[...]
        var problem: (Int64, String)?
        try connection.transaction { () throws(ServiceError) in
            try connection.execute("""
                DECLARE trail_records NO SCROLL CURSOR FOR
                SELECT seq, unix_time, boot_time, boot_id, uid, login, vault_user, event, item, outcome, reason,
                       prev_mac, mac, prev_chain, chain
                FROM records WHERE machine = $1 AND trail = $2 ORDER BY seq
                """, [machine, trailText])
            var done = false
            while !done, problem == nil {
                try connection.query("FETCH \(Self.fetchSize) FROM trail_records") { rows throws(ServiceError) in
                    done = rows.count == 0
                    fetching: for row in 0..<rows.count {
                        guard let record = Self.record(rows, row) else {
                            problem = (rows.int64(row, 0) ?? 0, "a field is missing or malformed")
                            break fetching
                        }
                        if result.first == nil, record.sequence != firstShipped {
                            problem = record.sequence > firstShipped
                                ? (firstShipped, "records \(firstShipped)…\(record.sequence - 1), the first shipped, are "
                                   + "missing: deleted at the collector")
                                : (record.sequence, "comes before the first record shipped (\(firstShipped)): inserted")
                            break fetching
                        }
                        if let found = verifier.add(record, trail: trail) {
                            problem = found
                            break fetching
                        }
                        while let seal = pendingSeals.first, seal.sequence <= record.sequence {
                            pendingSeals = pendingSeals.dropFirst()
                            if seal.sequence == record.sequence, let chain = record.chain,
                               chain != seal.chain {
                                problem = (seal.sequence, "is not the record the seal shipped with it names: rewritten")
                                break fetching
                            }
                        }
                        while let logged = pendingShipments.first, logged.shipment.last <= record.sequence {
                            pendingShipments = pendingShipments.dropFirst()
                            if logged.shipment.last == record.sequence, record.chain != logged.shipment.chain {
                                problem = (record.sequence, "is not the record the fleet log's entry \(logged.leaf) names: "
                                           + "rewritten")
                                break fetching
                            }
                            if logged.shipment.last < record.sequence {
                                problem = (logged.shipment.last, "is missing, yet the fleet log's entry \(logged.leaf) names "
                                           + "it as shipped: deleted at the collector")
                                break fetching
                            }
                        }
                        if pendingShipments.isEmpty, record.sequence > (shipments.last?.shipment.last ?? 0) {
                            problem = (record.sequence, "is in no shipment of the fleet log: written outside a shipment "
                                       + "(inserted, or another machine's record filed under this one)")
                            break fetching
                        }
                        if result.first == nil { result.first = record.sequence }
                        result.last = record.sequence
                        result.records += 1
                    }
                }
            }
            try connection.execute("CLOSE trail_records")
        }
        if let problem { return broken(problem.0, problem.1) }
        if let logged = pendingShipments.first {
            let missing = result.last.map { $0 &+ 1 } ?? firstShipped
            return broken(missing, "records \(missing)…\(shipments.last!.shipment.last) are missing, yet the fleet log's "
                          + "entry \(logged.leaf) names them as shipped: the tail was removed at the collector")
        }
        guard let newest = seals.last else {
            if result.records == 0 { return result }
            result.status = .unsealed
            result.problem = "no seal yet: records \(result.first!)…\(result.last!) are not vouched for until the "
                + "machine ships again"
            return result
        }
        if let last = result.last, newest.sequence < last {
            result.status = .unsealed
            result.problem = "records \(newest.sequence + 1)…\(last) are not yet covered by a seal: a shipment under "
                + "way or cut short; they are vouched for once the machine ships again"
            return result
        }
        if let found = verifier.finish(seal: newest) { return broken(found.sequence, found.reason) }
        return result
    }

    /// The record in row `row` of the verify cursor's result.
    static func record(_ rows: PostgresBinaryResult, _ row: Int) -> AuditRecord? {
        guard let sequence = rows.int64(row, 0), let unixTime = rows.double(row, 1), let bootTime = rows.double(row, 2),
              let bootID = rows.string(row, 3), let uid = rows.int64(row, 4).flatMap(UInt32.init(exactly:)),
              let login = rows.string(row, 5), let event = rows.string(row, 7), let outcome = rows.string(row, 9),
              let reason = rows.string(row, 10), let previousMAC = rows.bytes(row, 11), let mac = rows.bytes(row, 12)
        else { return nil }
        return AuditRecord(sequence: sequence, unixTime: unixTime, bootTime: bootTime, bootID: bootID, uid: uid,
                           loginName: login, vaultUser: rows.string(row, 6), event: AuditEvent(stored: event),
                           item: rows.string(row, 8), outcome: AuditOutcome(stored: outcome), reason: reason,
                           previousMAC: previousMAC, mac: mac, previousChain: rows.bytes(row, 13), chain: rows.bytes(row, 14))
    }

    // MARK: Querying

    /// The collected records `filter` selects, oldest first (by time, then machine and
    /// sequence), as stored: run ``verify(machine:report:)`` to trust them.
    public func query(_ filter: FleetQuery, _ each: (FleetRecordReport) -> Void) throws(ServiceError) -> Int {
        var conditions: [String] = []
        var parameters: [String?] = []
        func parameter(_ value: String) -> String {
            parameters.append(value)
            return "$\(parameters.count)"
        }
        if let user = filter.user {
            let placeholder = parameter(user)
            conditions.append("(login = \(placeholder) OR vault_user = \(placeholder))")
        }
        if let machine = filter.machine { conditions.append("machine = \(parameter(machine))") }
        if let item = filter.item { conditions.append("item = \(parameter(item))") }
        if !filter.events.isEmpty {
            conditions.append("event IN (" + filter.events.map { parameter($0) }.joined(separator: ", ") + ")")
        }
        if !filter.outcomes.isEmpty {
            conditions.append("outcome IN (" + filter.outcomes.map { parameter($0) }.joined(separator: ", ") + ")")
        }
        if let since = filter.since {
            conditions.append("unix_time >= \(parameter(PostgresCollector.exact(since.timeIntervalSince1970)))::float8")
        }
        if let until = filter.until {
            conditions.append("unix_time < \(parameter(PostgresCollector.exact(until.timeIntervalSince1970)))::float8")
        }
        let condition = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let limit = filter.limit.map { " LIMIT \(max(0, $0))" } ?? ""
        let rows = try connection.execute("""
            SELECT machine, trail, seq, unix_time, uid, login, vault_user, event, item, outcome, reason
            FROM records \(condition) ORDER BY unix_time, machine, seq\(limit)
            """, parameters).rows
        var count = 0
        for row in rows {
            guard let machine = row[0], let trail = Bytea.bytes(row[1]), let seq = row[2].flatMap({ Int64($0) }),
                  let unixTime = row[3].flatMap({ Double($0) }), let uid = row[4].flatMap({ UInt32($0) }),
                  let login = row[5], let event = row[7], let outcome = row[9], let reason = row[10] else { continue }
            each(FleetRecordReport(machine: machine, trail: Hex.encode(trail), seq: seq, unixTime: unixTime, uid: uid,
                                   login: login, vaultUser: row[6], event: event, item: row[8], outcome: outcome,
                                   reason: reason))
            count += 1
        }
        return count
    }
}

/// What `touchgate-collector query` selects; every condition given must hold.
public struct FleetQuery: Sendable {
    /// The login or the vault user.
    public var user: String?
    public var machine: String?
    public var item: String?
    /// Any of these events (none: all).
    public var events: [String]
    /// Any of these outcomes (none: all).
    public var outcomes: [String]
    /// From this moment on.
    public var since: Date?
    /// Before this moment.
    public var until: Date?
    /// At most this many (the oldest).
    public var limit: Int?

    /// A query.
    public init(user: String? = nil, machine: String? = nil, item: String? = nil, events: [String] = [],
                outcomes: [String] = [], since: Date? = nil, until: Date? = nil, limit: Int? = nil) {
        self.user = user
        self.machine = machine
        self.item = item
        self.events = events
        self.outcomes = outcomes
        self.since = since
        self.until = until
        self.limit = limit
    }
}
