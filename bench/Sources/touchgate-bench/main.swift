// touchgate-bench: the parts of the benchmark suite (bench/run.sh) that need Touchgate's
// libraries rather than its command line.
//
//   touchgate-bench replicate --from DIR --to DIR --count N
//       Fills the print store in --to with N prints under distinct user/finger keys, cycling
//       through the templates enrolled in --from (same reader), so that identify can be
//       timed against large galleries without N real enrollments.
//   touchgate-bench export --from DIR --out FILE
//       Writes the store's prints, in the order touchgate reads them, as a gallery file for
//       bench/reference.c: each serialized print preceded by its length (32-bit little-endian).
//   touchgate-bench audit-append --data DIR --count N --runs R [--synchronous full|normal]
//       Appends N records R times, one transaction each; prints records/s per run. With
//       `--synchronous` the writer connection's `PRAGMA synchronous` is set first: FULL makes
//       every commit wait for its fsync, NORMAL does not (the transaction and MAC alone).
//   touchgate-bench synchronous --data DIR
//       Prints the writer connection's `PRAGMA synchronous` as TouchgateDatabase opens it.
//   touchgate-bench audit-fill --data DIR --total N
//       Appends records until the log holds N (a log for `touchgate audit verify`).
//   touchgate-bench audit-verify --data DIR --runs R
//       Verifies the chain R times in this process; prints milliseconds per run.
//       Exit status 1 when it is broken.
//   touchgate-bench argon2id --runs R
//       Derives a key with the vault's default Argon2id limits R times; prints milliseconds
//       per run: the floor under `touchgate unlock`.
//   touchgate-bench fsync --dir DIR --count N --runs R
//       Overwrites 4 KiB blocks of an allocated file, each followed by fdatasync, N times
//       per run; prints microseconds per write+fdatasync: what durability costs on this disk.
//
//   touchgate-bench clear-failures --data DIR
//       Forgets the failure counters and any lockout (through the authenticated state store,
//       as a passphrase entry would), so that a no-match can be timed again and again:
//       verify and identify count every no-match toward a lockout.
//
// DIR is an XDG_DATA_HOME: the store is DIR/touchgate, as touchgate would find it.
// Records go to the database only, never to the system journal.
import CSodium
import Foundation
import TouchgateVault
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("touchgate-bench: \(message)\n".utf8))
    exit(status)
}

/// `--name value` options after the subcommand.
struct Options {
    private var values: [String: String] = [:]

    init(_ arguments: ArraySlice<String>) {
        var rest = arguments
        while let name = rest.popFirst() {
            guard name.hasPrefix("--"), let value = rest.popFirst() else { fail("expected --name value, got \(name)", status: 64) }
            values[String(name.dropFirst(2))] = value
        }
    }

    func string(_ name: String) -> String {
        guard let value = values[name] else { fail("missing --\(name)", status: 64) }
        return value
    }

    func optional(_ name: String) -> String? { values[name] }

    func int(_ name: String) -> Int {
        guard let value = Int(string(name)), value > 0 else { fail("--\(name) needs a positive number", status: 64) }
        return value
    }

    func database(_ name: String) throws -> TouchgateDatabase {
        let root = URL(fileURLWithPath: string(name))
        return try TouchgateDatabase(location: StoreLocation(directory: root.appendingPathComponent("touchgate")))
    }
}

let fingers = ["left-thumb", "left-index", "left-middle", "left-ring", "left-little",
               "right-thumb", "right-index", "right-middle", "right-ring", "right-little"]

func replicate(_ options: Options) throws {
    let sources = try PrintStore(database: options.database("from")).prints()
    guard let reader = sources.first else { fail("no prints enrolled in --from") }
    let templates = sources.filter { $0.driver == reader.driver && $0.deviceID == reader.deviceID }
    let target = PrintStore(database: try options.database("to"))
    for old in try target.prints() {
        try target.delete(user: old.user, finger: old.finger, driver: old.driver, deviceID: old.deviceID)
    }
    let count = options.int("count")
    for index in 0..<count {
        let source = templates[index % templates.count]
        let copy = StoredPrint(user: String(format: "gallery%04d", index / fingers.count),
                               finger: fingers[index % fingers.count], driver: source.driver,
                               deviceID: source.deviceID, enrolledAt: Date(), onDevice: source.onDevice,
                               template: source.template)
        try target.save(copy, replace: true)
    }
    print("\(count) prints from \(templates.count) templates on \(reader.driver)/\(reader.deviceID)")
}

func export(_ options: Options) throws {
    let prints = try PrintStore(database: options.database("from")).prints()
    guard !prints.isEmpty else { fail("no prints enrolled in --from") }
    var gallery = Data()
    for stored in prints {
        withUnsafeBytes(of: UInt32(stored.template.count).littleEndian) { gallery.append(contentsOf: $0) }
        gallery.append(contentsOf: stored.template)
    }
    try gallery.write(to: URL(fileURLWithPath: options.string("out")))
    print("\(prints.count) prints")
}

func auditLog(_ options: Options) throws -> AuditLog {
    try AuditLog(database: options.database("data"), journal: .disabled)
}

let benchmarkEntry = AuditEntry(event: .authAttempt, outcome: .success, vaultUser: "bench",
                                item: "benchmark", reason: "benchmark record")

func auditAppend(_ options: Options) throws {
    let log = try auditLog(options)
    if let mode = options.optional("synchronous") {
        guard ["FULL", "NORMAL"].contains(mode.uppercased()) else { fail("--synchronous takes full or normal", status: 64) }
        try log.database.writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(mode.uppercased())") }
    }
    let count = options.int("count")
    let clock = ContinuousClock()
    for _ in 0..<options.int("runs") {
        let start = clock.now
        for _ in 0..<count { try log.append(benchmarkEntry) }
        print(String(format: "%.1f", Double(count) / seconds(clock.now - start)))
    }
}

func synchronous(_ options: Options) throws {
    let database = try options.database("data")
    let level = try database.writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
    let names = [0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"]
    print(level.flatMap { names[$0] } ?? "unknown")
}

func auditFill(_ options: Options) throws {
    let log = try auditLog(options)
    guard case let .intact(present) = try log.verify() else { fail("the audit log in --data is broken") }
    let total = options.int("total")
    for _ in present..<max(present, total) { try log.append(benchmarkEntry) }
    print("\(max(present, total)) records")
}

func auditVerify(_ options: Options) throws {
    let log = try auditLog(options)
    try timed(runs: options.int("runs")) {
        let result = try log.verify()
        if !result.isIntact { fail("\(result)", status: 1) }
    }
}

func argon2id(_ options: Options) throws {
    let parameters = KDFParameters.moderate
    var key = [UInt8](repeating: 0, count: 32)
    let salt = [UInt8](repeating: 7, count: Int(crypto_pwhash_saltbytes()))
    let passphrase = "benchmark passphrase"
    guard sodium_init() >= 0 else { fail("libsodium could not be initialised") }
    try timed(runs: options.int("runs")) {
        let status = crypto_pwhash(&key, UInt64(key.count), passphrase, UInt64(passphrase.utf8.count), salt,
                                   parameters.opsLimit, Int(parameters.memLimit), parameters.algorithm)
        if status != 0 { fail("crypto_pwhash failed (out of memory?)") }
    }
}

func fsyncProbe(_ options: Options) throws {
    let path = URL(fileURLWithPath: options.string("dir")).appendingPathComponent("fsync.probe").path
    let fd = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fail("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd); unlink(path) }
    let block = [UInt8](repeating: 0x5A, count: 4096)
    let count = options.int("count")
    // Allocated and flushed first, as SQLite's WAL is once in use: each commit then
    // rewrites pages in place and waits for one fdatasync, without file-size metadata.
    for index in 0..<count where pwrite(fd, block, block.count, off_t(index * block.count)) != block.count {
        fail("write: \(String(cString: strerror(errno)))")
    }
    guard fsync(fd) == 0 else { fail("fsync: \(String(cString: strerror(errno)))") }
    let clock = ContinuousClock()
    for _ in 0..<options.int("runs") {
        let start = clock.now
        for index in 0..<count {
            guard pwrite(fd, block, block.count, off_t(index * block.count)) == block.count, fdatasync(fd) == 0 else {
                fail("write/fdatasync: \(String(cString: strerror(errno)))")
            }
        }
        print(String(format: "%.1f", seconds(clock.now - start) * 1e6 / Double(count)))
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `body` `runs` times, printing each run's milliseconds.
func timed(runs: Int, _ body: () throws -> Void) throws {
    let clock = ContinuousClock()
    for _ in 0..<runs {
        let start = clock.now
        try body()
        print(String(format: "%.2f", seconds(clock.now - start) * 1000))
    }
}

func clearFailures(_ options: Options) throws {
    // "policy.state" is the policy core's state (TouchgateService's VaultPolicyStateStore);
    // with no value it starts afresh: no failures, no lockout, no session.
    try StateStore(database: try options.database("data")).updateState("policy.state") { $0 = nil }
}

let arguments = CommandLine.arguments.dropFirst()
guard let command = arguments.first else {
    fail("usage: touchgate-bench replicate|export|audit-append|synchronous|audit-fill|audit-verify|argon2id|fsync|clear-failures --name value…", status: 64)
}
let options = Options(arguments.dropFirst())
do {
    switch command {
    case "replicate": try replicate(options)
    case "export": try export(options)
    case "audit-append": try auditAppend(options)
    case "audit-fill": try auditFill(options)
    case "audit-verify": try auditVerify(options)
    case "synchronous": try synchronous(options)
    case "argon2id": try argon2id(options)
    case "fsync": try fsyncProbe(options)
    case "clear-failures": try clearFailures(options)
    default: fail("unknown command \(command)", status: 64)
    }
} catch {
    fail("\(error)")
}
