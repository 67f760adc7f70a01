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
    /// The libpq connection string for the server, over TCP on loopback.
    var database: String { "host=127.0.0.1 port=\(port) user=postgres dbname=postgres" }
    /// What the server logged.
    var log: String { (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "" }
    /// The same server through its Unix socket (trusted even once TCP needs TLS).
    var localDatabase: String { "host=\(directory) port=\(port) user=postgres dbname=postgres" }
    /// ``database`` (or over the socket, ``localDatabase``) as `role` instead of the administrator.
    func database(as role: String, local: Bool = false) -> String {
        (local ? localDatabase : database).replacingOccurrences(of: "user=postgres", with: "user=\(role)")
    }

    /// Makes shipper roles (members of `touchgate_shipper`, as `touchgate-collector init` sets
    /// them up) for machines `names`, each able to log in as itself.
    func shipperRoles(_ names: String...) async throws {
        _ = try await psql(names.map { "CREATE ROLE \($0) LOGIN IN ROLE touchgate_shipper;" }.joined(separator: " "))
    }
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
        port = try freeLoopbackPort()
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
        let result = try await process.run([localDatabase, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        guard result.status == 0 else { throw RigError("psql \(sql): \(result.stderrLines)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// From now on TCP takes only TLS with a client certificate `pki`'s CA signed, for the
    /// user its name says (`cert` authentication); the Unix socket stays trusted. Restarts.
    func requireTLS(_ pki: TestPKI) async throws {
        let postgres = getpwnam("postgres")!.pointee
        for (name, mode) in [("server.crt", 0o644), ("server.key", 0o600), ("ca.crt", 0o644)] {
            let target = data + "/" + name
            try? FileManager.default.removeItem(atPath: target)
            try FileManager.default.copyItem(atPath: pki.path(name), toPath: target)
            chmod(target, mode_t(mode))
            chown(target, postgres.pw_uid, postgres.pw_gid)
        }
        try "local all all trust\nhostssl all all 127.0.0.1/32 cert\nhost all all 127.0.0.1/32 reject\n"
            .write(toFile: data + "/pg_hba.conf", atomically: true, encoding: .utf8)
        chown(data + "/pg_hba.conf", postgres.pw_uid, postgres.pw_gid)
        let settings = "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\nssl_ca_file = 'ca.crt'\n"
            + "log_connections = on\n"
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(settings.utf8))
        try handle.close()
        try await stop()
        try await start()
    }

    /// Runs `body` with this server, then removes the server whether `body` threw or not.
    func removing<T>(after body: (PostgresRig) async throws -> T) async throws -> T {
        do {
            let value = try await body(self)
            await remove()
            return value
        } catch {
            await remove()
            throw error
        }
    }

    /// Stops the server at once and removes the cluster.
    func remove() async {
        _ = try? await Self.asPostgres([Self.bin + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `command` as the `postgres` user; returns its exit status. Its output goes to
    /// /dev/null: the server pg_ctl starts keeps inherited descriptors open for its whole
    /// life, and the end is seen on the process itself (its pidfd), not on its outputs.
    private static func asPostgres(_ command: [String]) async throws -> Int32 {
        let process = try await BackgroundProcess.start(
            "/usr/bin/setpriv", ["--reuid=postgres", "--regid=postgres", "--clear-groups", "--"] + command,
            environment: ["LC_ALL": "C", "PATH": "/usr/bin:/bin"])
        return await process.ended()
    }
}

/// A certificate authority made for one test with the openssl command, and what it
/// signed: `server.crt` for 127.0.0.1, `client.crt` for the user `client` names; each
/// with its `.key`, private to its owner. Another, unrelated CA is `other-ca.crt`.
struct TestPKI {
    let directory: String

    init(in directory: String, client: String) async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            throw RigError("openssl is not installed: apt-get install openssl")
        }
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try "subjectAltName = IP:127.0.0.1\n".write(toFile: directory + "/server.ext", atomically: true, encoding: .utf8)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await openssl(["req", "-x509", "-days", "2", "-subj", "/CN=Touchgate test CA"] + key
                    + ["-keyout", path("ca.key"), "-out", path("ca.crt")])
        try await openssl(["req", "-x509", "-days", "2", "-subj", "/CN=Another CA"] + key
                    + ["-keyout", path("other-ca.key"), "-out", path("other-ca.crt")])
        for (name, subject, extensions) in [("server", "/CN=127.0.0.1", ["-extfile", path("server.ext")]),
                                            ("client", "/CN=\(client)", [])] {
            try await openssl(["req", "-new", "-subj", subject] + key + ["-keyout", path(name + ".key"), "-out", path(name + ".csr")])
            try await openssl(["x509", "-req", "-days", "2", "-in", path(name + ".csr"), "-CA", path("ca.crt"),
                         "-CAkey", path("ca.key"), "-CAcreateserial", "-out", path(name + ".crt")] + extensions)
            chmod(path(name + ".key"), 0o600)
        }
    }

    func path(_ name: String) -> String { directory + "/" + name }

    private func openssl(_ arguments: [String]) async throws {
        let result = try await runProgram("/usr/bin/openssl", arguments)
        guard result.status == 0 else { throw RigError("openssl \(arguments.prefix(2).joined(separator: " ")): \(result.stderr)") }
    }
}

/// A rig that cannot be set up, saying why and what to install.
struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
