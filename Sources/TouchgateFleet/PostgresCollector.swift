import Dispatch
import FoundationEssentials
import Synchronization
public import TouchgateShipping
public import TouchgateVault
public import TouchgateAPI

/// The collector's database as the shipping use case sees it (``AuditCollector``): one
/// connection, opened lazily and kept for a whole shipment.
///
/// libpq blocks (connecting can take up to its `connect_timeout`), so every call runs on
/// a serial queue of its own, never on a thread of Swift's cooperative pool.
public final class PostgresCollector: AuditCollector, Sendable {
    private let configuration: FleetConfiguration
    /// The open connection, if any; a call holds it for its whole length.
    private let connection = Mutex<PostgresConnection?>(nil)
    private let queue = DispatchQueue(label: "touchgate.fleet.collector")

    /// The columns of a record as shipped, in the order rows are copied.
    static let columns = "machine, trail, seq, unix_time, boot_time, boot_id, uid, login, vault_user, event, item, "
        + "outcome, reason, prev_mac, mac, prev_chain, chain"

    /// A collector at the database `configuration` names; nothing is connected yet.
    public init(configuration: FleetConfiguration) {
        self.configuration = configuration
    }

    deinit {
        close()
    }

    /// Closes the connection, if one is open.
    public func close() {
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }

    public func store(machine: String, trail: [UInt8], publicKey: [UInt8], records: [AuditRecord], seal: AuditSeal?,
                      batch: FleetEntry.Batch?) async throws(ServiceError) -> Int64? {
        try await onConnection("the collector did not take the records") { connection throws(ServiceError) in
            try connection.transaction { () throws(ServiceError) -> Int64? in
                try Self.insert(machine: machine, trail: trail, publicKey: publicKey, records: records, seal: seal,
                                connection)
                guard let batch else { return nil }
                return try FleetLogStore(connection).append(batch: batch, span: Self.span(of: records, in: batch))
            }
        }
    }

    public func proofs(leaf: Int64?, from old: Int64?) async throws(ServiceError) -> FleetProofs {
        try await onConnection("the collector did not give its log's proofs") { connection throws(ServiceError) in
            try FleetLogStore(connection).proofs(leaf: leaf, from: old)
        }
    }

    /// Runs `body` on the connection (opened if none is) on the serial queue, off the
    /// cooperative pool. A failure to reach the database or run a statement closes the
    /// connection (the next call opens a fresh one) and says `what` did not happen;
    /// `audit-broken` (what the database holds is wrong) passes through as it is.
    private func onConnection<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresConnection) throws(ServiceError) -> T)
        async throws(ServiceError) -> T {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ServiceError>, Never>) in
            queue.async {
                continuation.resume(returning: Result(catching: { () throws(ServiceError) -> T in
                    try self.withConnection(what, body)
                }))
            }
        }
        return try outcome.get()
    }

    private func withConnection<T: Sendable>(_ what: String, _ body: (PostgresConnection) throws(ServiceError) -> T)
        throws(ServiceError) -> T {
        try connection.withLock { (held: inout PostgresConnection?) throws(ServiceError) -> T in
            let connection: PostgresConnection
            if let open = held {
                connection = open
            } else {
                connection = try PostgresConnection(database: configuration.database, settings: configuration.tls)
                held = connection
            }
            do throws(ServiceError) {
                return try body(connection)
            } catch where error.code != .collectorUnavailable {
                // What the database holds is wrong (`audit-broken`), or not there: passed on as
                // it is, for the shipping use case to say as a damaged log.
                throw error
            } catch {
                connection.close()
                held = nil
                throw ServiceError(.collectorUnavailable, "\(what): \(error.message)"
                                   + (error.message.contains("does not exist")
                                      ? " (run `touchgate-collector init` on the database)" : ""))
            }
        }
    }

    /// The statements that store one batch's records and seal, inside its transaction.
    /// Records the collector already holds identically (a batch sent again) are left as
    /// they are; a sequence number held with other contents was taken by another writer.
    static func insert(machine: String, trail: [UInt8], publicKey: [UInt8], records: [AuditRecord],
                       seal: AuditSeal?, _ connection: PostgresConnection) throws(ServiceError) {
        let trailText = Bytea.text(trail)
        let first = records.first?.sequence ?? (seal?.sequence ?? 0) + 1
        let columns = Self.columns
        try connection.execute("""
            INSERT INTO trails (machine, trail, public_key, first_seq) VALUES ($1, $2, $3, $4)
            ON CONFLICT (machine, trail) DO NOTHING
            """, [machine, trailText, Bytea.text(publicKey), String(first)])
        // The whole batch is one statement of 17 binary arrays, zipped by unnest; a row the
        // collector already holds is left as it is (checked below).
        var inserted = 0
        if !records.isEmpty {
            typealias Binary = BinaryParameter
            func column(_ type: UInt32, bytes: Int, _ add: (inout Binary.ArrayBuilder, AuditRecord) -> Void) -> [UInt8]? {
                var array = Binary.ArrayBuilder(of: type, capacity: records.count * (4 + bytes))
                for record in records { add(&array, record) }
                return array.finished
            }
            inserted = try connection.executeBinary("""
                INSERT INTO records (\(columns))
                SELECT $1::text, $2::bytea, * FROM unnest($3::int8[], $4::float8[], $5::float8[], $6::text[], $7::int8[],
                    $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bytea[], $15::bytea[],
                    $16::bytea[], $17::bytea[])
                ON CONFLICT (machine, trail, seq, unix_time) DO NOTHING
                """, [
                    Binary.text(machine), trail,
                    column(Binary.int8, bytes: 8) { $0.int64($1.sequence) },
                    column(Binary.float8, bytes: 8) { $0.double($1.unixTime) },
                    column(Binary.float8, bytes: 8) { $0.double($1.bootTime) },
                    column(Binary.text, bytes: 36) { $0.text($1.bootID) },
                    column(Binary.int8, bytes: 8) { $0.int64(Int64($1.uid)) },
                    column(Binary.text, bytes: 16) { $0.text($1.loginName) },
                    column(Binary.text, bytes: 16) { $0.text($1.vaultUser) },
                    column(Binary.text, bytes: 12) { $0.text($1.event.rawValue) },
                    column(Binary.text, bytes: 24) { $0.text($1.item) },
                    column(Binary.text, bytes: 8) { $0.text($1.outcome.rawValue) },
                    column(Binary.text, bytes: 64) { $0.text($1.reason) },
                    column(Binary.bytea, bytes: 32) { $0.bytea($1.previousMAC) },
                    column(Binary.bytea, bytes: 32) { $0.bytea($1.mac) },
                    column(Binary.bytea, bytes: 32) { $0.bytea($1.previousChain) },
                    column(Binary.bytea, bytes: 32) { $0.bytea($1.chain) },
                ])
        }
        // The key holds the time too (the table is partitioned by month), so another writer's
        // record at one of these sequence numbers with another time does not conflict: it
        // shows as one row too many in the range. Every row new and none beside them: nothing
        // to compare (the common case, one count); else each held row is compared with ours.
        // The count reads the months the batch's records are in (every month's index, read
        // for each shipment, was what the collector spent its time on at a morning peak); a
        // row squatted in another month is found by verify, as a sequence number held twice.
        if let first = records.first, let last = records.last {
            var query = "SELECT count(*) FROM records WHERE machine = $1 AND trail = $2 AND seq BETWEEN $3 AND $4"
            var parameters = [machine, trailText, String(first.sequence), String(last.sequence)]
            let times = records.map(\.unixTime)
            if let low = times.min(), let high = times.max(), low >= 0, high < 253_402_300_800 {  // before year 10000
                query += """
                     AND unix_time >= extract(epoch FROM date_trunc('month', to_timestamp($5::float8) AT TIME ZONE 'UTC'))
                     AND unix_time < extract(epoch FROM date_trunc('month', to_timestamp($6::float8) AT TIME ZONE 'UTC')
                                                        + interval '1 month')
                    """
                parameters += [Self.exact(low), Self.exact(high)]
            }
            let held = Int(try connection.execute(query, parameters).scalar ?? "") ?? -1
            if inserted != records.count || held != records.count {
                try checkHeld(machine: machine, trail: trail, records: records, from: first.sequence,
                              through: last.sequence, connection)
            }
        }
        if let seal {
            try connection.execute("""
                INSERT INTO seals (machine, trail, seq, chain, public_key, signature) VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (machine, trail, seq) DO NOTHING
                """, [machine, trailText, String(seal.sequence), Bytea.text(seal.chain), Bytea.text(seal.publicKey),
                      Bytea.text(seal.signature)])
        }
    }

    /// The first and last time of `records` when they are the whole of `batch` (every
    /// sequence number it names, once), else nil: the head's checks then read every month.
    static func span(of records: [AuditRecord], in batch: FleetEntry.Batch) -> ClosedRange<Double>? {
        guard records.count == batch.shipment.last - batch.shipment.first + 1,
              records.first?.sequence == batch.shipment.first, records.last?.sequence == batch.shipment.last,
              zip(records, records.dropFirst()).allSatisfy({ $1.sequence == $0.sequence + 1 }),
              let low = records.map(\.unixTime).min(), let high = records.map(\.unixTime).max(),
              low.isFinite, high.isFinite else { return nil }
        return low...high
    }

    /// Checks that the records the collector already held in this batch's range are ours.
    private static func checkHeld(machine: String, trail: [UInt8], records: [AuditRecord], from first: Int64,
                                  through last: Int64, _ connection: PostgresConnection) throws(ServiceError) {
        var held: [Int64: [(mac: [UInt8]?, chain: [UInt8]?)]] = [:]
        for row in try connection.execute("""
            SELECT seq, mac, chain FROM records WHERE machine = $1 AND trail = $2 AND seq BETWEEN $3 AND $4
            """, [machine, Bytea.text(trail), String(first), String(last)]).rows {
            if let seq = row[0].flatMap({ Int64($0) }) { held[seq, default: []].append((Bytea.bytes(row[1]), Bytea.bytes(row[2]))) }
        }
        let foreign = records.filter { record in
            guard let stored = held[record.sequence] else { return true }
            return stored.contains { $0.mac != record.mac || $0.chain != record.chain }
        }.map(\.sequence)
        guard let low = foreign.min(), let high = foreign.max() else { return }
        throw ServiceError(.auditBroken, "the collector already holds other records than this machine's at "
                           + "sequence\(low == high ? " \(low)" : "s \(low)…\(high)") of this trail (\(foreign.count) "
                           + "record\(foreign.count == 1 ? "" : "s")): another writer took them (another machine's "
                           + "credentials or the database's administrator); nothing was marked shipped. Tell the "
                           + "collector's auditor: the genuine records are safe here")
    }

    /// A double in a text form that reads back as exactly the same value.
    static func exact(_ value: Double) -> String { "\(value)" }
}
