import Foundation
import TouchgateService
import TouchgateVault
import TouchgateWire

/// The collector's database as the shipping use case sees it (``AuditCollector``): one
/// connection, opened lazily and kept for a whole shipment.
///
/// libpq blocks (connecting can take up to its `connect_timeout`), so every call runs on
/// a serial queue of its own, never on a thread of Swift's cooperative pool.
///
/// `@unchecked Sendable`: the connection is only touched under `lock`.
public final class PostgresCollector: AuditCollector, @unchecked Sendable {
    private let configuration: FleetConfiguration
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private let queue = DispatchQueue(label: "touchgate.fleet.collector")

    /// The most rows one INSERT carries (each takes 16 of PostgreSQL's 65535 parameters).
    static let rowsPerStatement = 2000

    /// A collector at the database `configuration` names; nothing is connected yet.
    public init(configuration: FleetConfiguration) {
        self.configuration = configuration
    }

    deinit {
        connection?.close()
    }

    /// Closes the connection, if one is open.
    public func close() {
        lock.withLock {
            connection?.close()
            connection = nil
        }
    }

    public func store(machine: String, trail: [UInt8], publicKey: [UInt8], records: [AuditRecord],
                      seal: AuditSeal?) async throws(ServiceError) {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, ServiceError>, Never>) in
            queue.async {
                continuation.resume(returning: Result(catching: { () throws(ServiceError) in
                    try self.storeNow(machine: machine, trail: trail, publicKey: publicKey, records: records, seal: seal)
                }))
            }
        }
        try outcome.get()
    }

    /// ``store(machine:trail:publicKey:records:seal:)``, blocking the calling thread.
    private func storeNow(machine: String, trail: [UInt8], publicKey: [UInt8], records: [AuditRecord],
                          seal: AuditSeal?) throws(ServiceError) {
        lock.lock()
        defer { lock.unlock() }
        let connection: PostgresConnection
        if let open = self.connection {
            connection = open
        } else {
            connection = try PostgresConnection(database: configuration.database, settings: configuration.tls)
            self.connection = connection
        }
        do {
            try connection.transaction { () throws(ServiceError) in
                try Self.insert(machine: machine, trail: trail, publicKey: publicKey, records: records, seal: seal,
                                connection)
            }
        } catch {
            // A broken connection is opened afresh by the next shipment.
            connection.close()
            self.connection = nil
            throw ServiceError(.collectorUnavailable, "the collector did not take the records: \(error.message)"
                               + (error.message.contains("does not exist")
                                  ? " (run `touchgate-collector init` on the database)" : ""))
        }
    }

    /// The statements of one batch, inside its transaction.
    static func insert(machine: String, trail: [UInt8], publicKey: [UInt8], records: [AuditRecord],
                       seal: AuditSeal?, _ connection: PostgresConnection) throws(ServiceError) {
        let trailText = Bytea.text(trail)
        let first = records.first?.sequence ?? (seal?.sequence ?? 0) + 1
        try connection.execute("""
            INSERT INTO trails (machine, trail, public_key, first_seq) VALUES ($1, $2, $3, $4)
            ON CONFLICT (machine, trail) DO NOTHING
            """, [machine, trailText, Bytea.text(publicKey), String(first)])
        var start = records.startIndex
        while start < records.endIndex {
            let chunk = records[start..<min(start + rowsPerStatement, records.endIndex)]
            var values: [String] = []
            var parameters: [String?] = [machine, trailText]
            for record in chunk {
                let base = parameters.count
                values.append("($1, $2, " + (1...15).map { "$\(base + $0)" }.joined(separator: ", ") + ")")
                parameters += [
                    String(record.sequence), Self.exact(record.unixTime), Self.exact(record.bootTime), record.bootID,
                    String(record.uid), record.loginName, record.vaultUser, record.event.rawValue, record.item,
                    record.outcome.rawValue, record.reason, Bytea.text(record.previousMAC), Bytea.text(record.mac),
                    record.previousChain.map(Bytea.text), record.chain.map(Bytea.text),
                ]
            }
            try connection.execute("""
                INSERT INTO records (machine, trail, seq, unix_time, boot_time, boot_id, uid, login, vault_user, event,
                    item, outcome, reason, prev_mac, mac, prev_chain, chain)
                VALUES \(values.joined(separator: ", "))
                ON CONFLICT (machine, trail, seq) DO NOTHING
                """, parameters)
            start = chunk.endIndex
        }
        if let seal {
            try connection.execute("""
                INSERT INTO seals (machine, trail, seq, chain, public_key, signature) VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (machine, trail, seq) DO NOTHING
                """, [machine, trailText, String(seal.sequence), Bytea.text(seal.chain), Bytea.text(seal.publicKey),
                      Bytea.text(seal.signature)])
        }
    }

    /// A double in a text form that reads back as exactly the same value.
    static func exact(_ value: Double) -> String { "\(value)" }
}
