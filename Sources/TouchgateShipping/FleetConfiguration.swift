import FoundationEssentials
public import TouchgateAPI
import Glibc

/// The fleet collection settings of a machine: `/etc/touchgate/fleet.conf`.
///
/// One `key = value` a line; `#` starts a comment. Keys: `database` (a libpq connection
/// string or `postgresql://` URL), `sslmode`, `sslrootcert`, `sslcert`, `sslkey` (TLS, as
/// libpq names them), `machine` (default: the host name), `backlog-limit` (records that
/// may wait unshipped before `audit ship` fails with `backlog-full`; default 100000),
/// `batch-size` (records per transaction; default ``defaultBatchSize``) and `ship-every` (seconds between
/// touchgated's own shipments of every trail; default 300).
///
/// The file decides where every user's trail goes, so only root may be able to change it:
/// it must be a regular file owned by root that neither its group nor others can write.
public struct FleetConfiguration: Sendable, Equatable {
    /// Where the file is looked for by default.
    public static let defaultPath = Vocabulary.fleetConfiguration

    /// The libpq connection string or URL.
    public var database: String
    /// TLS settings passed to libpq beside ``database`` (`sslmode`, `sslrootcert`, …).
    public var tls: [String: String]
    /// The name this machine's records are filed under.
    public var machine: String
    /// How many records may wait unshipped before a failed shipment is `backlog-full`.
    public var backlogLimit: Int
    /// Records per transaction.
    public var batchSize: Int
    /// Records per transaction unless `batch-size` says otherwise. Each batch is one entry of
    /// the collector's fleet log, appended under the log's one lock with a proof checked
    /// after it: 5,000 ships a quarter faster with 16 machines at once than 1,000 did
    /// (BENCHMARKS §8) and holds about 2 MB of records in memory.
    public static let defaultBatchSize = 5000
    /// Seconds between touchgated's own shipments.
    public var shipEvery: Int

    /// The TLS keys the file may set.
    public static let tlsKeys: Set<String> = ["sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl"]

    /// Settings given directly.
    public init(database: String, tls: [String: String] = [:], machine: String? = nil,
                backlogLimit: Int = 100_000, batchSize: Int = defaultBatchSize, shipEvery: Int = 300) {
        self.database = database
        self.tls = tls
        self.machine = machine ?? ProcessInfo.processInfo.hostName
        self.backlogLimit = backlogLimit
        self.batchSize = batchSize
        self.shipEvery = shipEvery
    }

    /// Reads and checks the file at `path`.
    /// - Throws: ``ServiceError`` `forbidden` for a file root does not own or others may
    ///   write; `not-found` when it is missing; `usage` for a line that is not a setting.
    public static func load(path: String = defaultPath) throws(ServiceError) -> FleetConfiguration {
        let shown = StoredText.escaped(path)
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            if errno == ENOENT {
                throw ServiceError(.notFound, "no fleet configuration at \(shown): create it as root (docs/FLEET.md), "
                                   + "or name another with --config FILE")
            }
            throw ServiceError(.forbidden, "cannot open the fleet configuration \(shown): \(reason) (a symbolic link is refused)")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ServiceError(.forbidden, "the fleet configuration \(shown) is not a regular file")
        }
        guard status.st_uid == 0, status.st_mode & 0o022 == 0 else {
            throw ServiceError(.forbidden, "the fleet configuration \(shown) must be owned by root and writable by "
                               + "root alone (it decides where every trail goes): `chown root: \(shown); "
                               + "chmod 644 \(shown)`")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count < 65536 {
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return try parse(String(decoding: data, as: UTF8.self), path: shown)
    }

    /// The settings in `text` (the file's contents).
    static func parse(_ text: String, path: String) throws(ServiceError) -> FleetConfiguration {
        var values: [String: String] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ServiceError(.usage, "\(path) line \(index + 1) is not `key = value`")
            }
            let key = line[..<equals].trimmingSpaces()
            let value = line[line.index(after: equals)...].trimmingSpaces()
            guard ["database", "machine", "backlog-limit", "batch-size", "ship-every"].contains(key) || tlsKeys.contains(key) else {
                throw ServiceError(.usage, "\(path) line \(index + 1): unknown setting \(key.debugDescription); the settings "
                                         + "are database, sslmode, sslrootcert, sslcert, sslkey, sslcrl, machine, "
                                         + "backlog-limit, batch-size, ship-every")
            }
            values[key] = value
        }
        guard let database = values["database"], !database.isEmpty else {
            throw ServiceError(.usage, "\(path) names no database: add `database = postgresql://collector.example/touchgate`")
        }
        func number(_ key: String, default value: Int) throws(ServiceError) -> Int {
            guard let text = values[key] else { return value }
            guard let number = Int(text), number > 0 else {
                throw ServiceError(.usage, "\(path): \(key) takes a whole number above 0, not \(text.debugDescription)")
            }
            return number
        }
        let machine = values["machine"].flatMap { $0.isEmpty ? nil : $0 }
        if let machine, let problem = StoredText.problem(withName: machine, what: "machine") {
            throw ServiceError(.usage, "\(path): \(problem)")
        }
        return FleetConfiguration(database: database, tls: values.filter { tlsKeys.contains($0.key) }, machine: machine,
                                  backlogLimit: try number("backlog-limit", default: 100_000),
                                  batchSize: try number("batch-size", default: Self.defaultBatchSize),
                                  shipEvery: try number("ship-every", default: 300))
    }
}
