import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL 15 server for one test: a cluster made by `initdb` in a temporary
/// directory, run by the `postgres` user (through setpriv) on a free loopback port, with
/// its Unix socket in the same directory. Trust authentication: nothing else can reach it.
final class PostgresRig: Sendable {
    static let bin = "/usr/lib/postgresql/15/bin"

    let directory: String
    let port: Int
    /// The libpq connection string for the server.
    var database: String { "host=127.0.0.1 port=\(port) user=postgres dbname=postgres" }
    private var data: String { directory + "/data" }

    /// Makes and starts the cluster.
    init() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.bin + "/initdb"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/psql"), getpwnam("postgres") != nil else {
            throw RigError("PostgreSQL 15 is not installed: apt-get install postgresql (scripts/setup.sh)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tg-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let user = getpwnam("postgres")!.pointee
        guard chown(directory, user.pw_uid, user.pw_gid) == 0 else { throw RigError("cannot chown \(directory)") }
        port = try Self.freePort()
        let made = try await Self.asPostgres([Self.bin + "/initdb", "-D", directory + "/data", "-A", "trust", "-U", "postgres",
                                              "--no-sync", "-E", "UTF8"])
        guard made == 0 else { throw RigError("initdb failed (status \(made)) in \(directory)") }
        try await start()
    }

    /// Starts the server and waits until it accepts connections.
    func start() async throws {
        let started = try await Self.asPostgres([
            Self.bin + "/pg_ctl", "-D", data, "-l", directory + "/log", "-w", "-t", "30", "-o",
            "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50", "start",
        ])
        guard started == 0 else {
            let log = (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? ""
            throw RigError("pg_ctl start failed (status \(started)): \(log.suffix(500))")
        }
    }

    /// Stops the server: fast (what an administrator's restart does: connections are cut).
    func stop() async throws {
        let stopped = try await Self.asPostgres([Self.bin + "/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"])
        guard stopped == 0 else { throw RigError("pg_ctl stop failed (status \(stopped))") }
    }

    /// Runs SQL with psql; returns its unaligned, tuples-only output.
    @discardableResult
    func psql(_ sql: String) async throws -> String {
        var process = CLIProcess(environment: [:])
        process.binaryOverride = "/usr/bin/psql"
        let result = try await process.run([database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        guard result.status == 0 else { throw RigError("psql \(sql): \(result.stderrLines)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server at once and removes the cluster.
    func remove() async {
        _ = try? await Self.asPostgres([Self.bin + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `command` as the `postgres` user; returns its exit status. Its output goes to
    /// /dev/null: the server pg_ctl starts keeps inherited descriptors open for its whole
    /// life. Spawned and reaped with posix_spawn and waitpid rather than Foundation's
    /// Process, which never noticed pg_ctl ending once it had forked the server (the test
    /// spun in waitUntilExit). Waits on a thread of its own, off the cooperative pool.
    private static func asPostgres(_ command: [String]) async throws -> Int32 {
        let arguments = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups", "--"] + command
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let null = strdup("/dev/null")
        defer { free(null) }
        for descriptor: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, descriptor, null!, descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        func copies(_ texts: [String]) -> [UnsafeMutablePointer<CChar>?] {
            texts.map { (text: String) -> UnsafeMutablePointer<CChar>? in strdup(text) } + [nil]
        }
        let argv = copies(arguments)
        let envp = copies(["LC_ALL=C", "PATH=/usr/bin:/bin"])
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, argv[0]!, &actions, nil, argv, envp)
        guard spawned == 0 else { throw RigError("cannot start \(command[0]): \(String(cString: strerror(spawned)))") }
        let child = pid
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
            }
        }
    }

    /// A loopback TCP port nothing listens on right now.
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw RigError("no free loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A rig that cannot be set up, saying why and what to install.
struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
