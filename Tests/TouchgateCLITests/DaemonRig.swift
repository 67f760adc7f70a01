import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A `touchgated` started by the test in foreground mode on a socket and state directory
/// of its own, with a virtual_image reader, and `touchgate` clients that reach it through
/// `TOUCHGATE_SOCKET` (as this user, or as another one through setpriv).
final class DaemonRig: @unchecked Sendable {
    // @unchecked Sendable: `daemon` is only touched under `lock`.
    static let passphrase = "correct horse battery staple"
    /// The unprivileged user the tests run clients as (Debian's `nobody`).
    static let otherUID: UInt32 = 65534
    /// The user the daemon runs as when the tests run as root: Debian's `daemon` (uid 1),
    /// standing in for the dedicated user the service unit creates.
    static let daemonUID: UInt32 = 1

    let home: TemporaryDirectory
    let finger: VirtualImageFinger
    private let lock = NSLock()
    private var daemon: BackgroundProcess?
    /// More environment for the daemon (`DBUS_SYSTEM_BUS_ADDRESS` of a private bus, say).
    var daemonEnvironment: [String: String] = [:]
    /// More arguments for the daemon. Without `--fleet-config`, it is pointed at a file
    /// that does not exist, never at the machine's own /etc/touchgate/fleet.conf.
    var daemonArguments: [String] = []
    /// A command the daemon is started under (`prlimit --memlock=…`, say).
    var daemonPrefix: [String] = []

    var socketPath: String { home.path("run/socket") }
    var stateDirectory: String { home.path("state") }
    var logPath: String { home.path("touchgated.log") }
    /// The binaries, copied where any user may run them (the build directory may sit
    /// under a home only its owner can enter).
    var binDirectory: String { home.path("bin") }

    init() async throws {
        let home = try TemporaryDirectory("touchgated")
        self.home = home
        finger = VirtualImageFinger(socketPath: home.path("dev/virtual-image.socket"))
        // The socket's directory must be reachable by the other user, as /run/touchgate is.
        chmod(home.url.path, 0o755)
        // The daemon's own: its state, and the directory where its virtual reader listens.
        for owned in ["state", "dev"] {
            try FileManager.default.createDirectory(atPath: home.path(owned), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            if getuid() == 0 { chown(home.path(owned), Self.daemonUID, Self.daemonUID) }
        }
        chmod(home.path("dev"), 0o755)
        try FileManager.default.createDirectory(atPath: home.path("run"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        let bin = home.path("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        let built = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent()
        for name in ["touchgate", "touchgate-cli", "touchgate-client", "touchgated"] {
            let source = built.appendingPathComponent(name).path
            guard FileManager.default.isExecutableFile(atPath: source) else {
                Issue.record("\(source) is missing: build the package first (swift build --build-tests)")
                throw POSIXError(.ENOENT)
            }
            // Copied by cp, not in this process: a descriptor open for writing here would be
            // inherited by any child another test forks meanwhile, and exec of the copy would
            // fail with ETXTBSY ("Text file busy") until that child had exec'd in turn.
            let copied = try await runProgram("/bin/cp", [source, bin + "/" + name])
            guard copied.status == 0 else {
                Issue.record("cp \(source): \(copied.stderr)")
                throw POSIXError(.EIO)
            }
            chmod(bin + "/" + name, 0o755)
        }
    }

    deinit {
        stop()
        home.remove()
    }

    /// Starts the daemon and waits until it accepts connections.
    func start() async throws {
        let fleet = daemonArguments.contains("--fleet-config") ? [] : ["--fleet-config", home.path("no-fleet.conf")]
        let command = [binDirectory + "/touchgated", "--socket", socketPath, "--state-dir", stateDirectory]
            + fleet + daemonArguments
        var full = command
        if getuid() == 0 {
            // Under a user of its own, as installed: its files and memory are not the clients'.
            full = ["/usr/bin/setpriv", "--reuid=\(Self.daemonUID)", "--regid=\(Self.daemonUID)", "--clear-groups", "--"]
                + command
            chown(home.path("run"), Self.daemonUID, Self.daemonUID)
        }
        full = daemonPrefix + full
        let environment = [
            "PATH": "/usr/bin:/bin",
            "FP_VIRTUAL_IMAGE": finger.socketPath,
            "FP_DRIVERS_WHITELIST": "virtual_image",
        ].merging(daemonEnvironment) { $1 }
        let process = try await BackgroundProcess.start(full[0], Array(full.dropFirst()), environment: environment,
                                                        output: .file(logPath), error: .file(logPath))
        lock.withLock { daemon = process }
        for _ in 0..<200 {
            if (try? connectOnce()) == true { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("touchgated did not start listening within 10 s; its log:\n\(daemonLog)")
        throw POSIXError(.ETIMEDOUT)
    }

    /// Stops the daemon with `signal` (SIGTERM: an orderly stop; SIGKILL: a crash) and waits
    /// (SIGKILL after 30 s).
    func stop(signal: Int32 = SIGTERM) {
        guard let process = lock.withLock({ daemon }) else { return }
        process.stop(signal: signal, seconds: 30)
        lock.withLock { daemon = nil }
    }

    /// The daemon's process id while it runs (setpriv execs it: the same process).
    var daemonPID: Int32? {
        lock.withLock { daemon.flatMap { $0.isRunning ? $0.processIdentifier : nil } }
    }

    /// Whether the daemon holds, among its open descriptors, a Unix socket bound to `path`
    /// (the listening socket of a virtual reader it has open): the socket's inode from
    /// `/proc/net/unix`, looked for among `/proc/<pid>/fd`.
    func daemonHoldsSocket(boundTo path: String) -> Bool {
        // Read to the end: on a busy machine the table runs to many pages of procfs.
        guard let pid = daemonPID, let file = FileHandle(forReadingAtPath: "/proc/net/unix") else { return false }
        let table = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
        try? file.close()
        // Num RefCount Protocol Flags Type St Inode Path
        let inodes = Set(table.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count >= 8 && fields[7] == path ? String(fields[6]) : nil
        })
        guard !inodes.isEmpty,
              let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return false }
        return descriptors.contains { descriptor in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)"),
                  target.hasPrefix("socket:[") else { return false }
            return inodes.contains(String(target.dropFirst("socket:[".count).dropLast()))
        }
    }

    /// The daemon's log lines that contain `text`.
    func logLines(containing text: String) -> [Substring] {
        daemonLog.split(separator: "\n").filter { $0.contains(text) }
    }

    /// How many keys the kernel holds for the daemon's user (`/proc/key-users`), or nil
    /// when it holds none.
    static func kernelKeys(of uid: UInt32) -> Int? {
        let table = (try? String(contentsOfFile: "/proc/key-users", encoding: .utf8)) ?? ""
        for line in table.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "/" }).filter { !$0.isEmpty }
            if fields.first.flatMap({ UInt32($0) }) == uid, fields.count > 2 { return Int(fields[2]) }
        }
        return nil
    }

    /// What the daemon wrote to its log.
    var daemonLog: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    private func connectOnce() throws -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        return withUnixAddress(socketPath) { connect(descriptor, $0, $1) } == 0
    }

    /// A client environment: the daemon's socket, and a HOME of its own that the personal
    /// mode would use (so a test can show nothing is written there).
    func client(as uid: UInt32? = nil) -> CLIProcess {
        let clientHome = home.path(uid.map { "client-\($0)" } ?? "client")
        try? FileManager.default.createDirectory(atPath: clientHome, withIntermediateDirectories: true)
        if let uid { chown(clientHome, uid, uid) }
        var process = CLIProcess(environment: [
            "HOME": clientHome,
            "XDG_DATA_HOME": clientHome + "/data",
            "TOUCHGATE_SOCKET": socketPath,
        ])
        process.binaryOverride = binDirectory + "/touchgate"
        if let uid {
            process.wrapper = ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--"]
        }
        return process
    }

    /// Runs `touchgate arguments` through the daemon, answering each prompt with the next of `prints`.
    func run(_ arguments: [String], presenting prints: [String] = [], stdin: Data? = nil,
             as uid: UInt32? = nil) async throws -> CLIResult {
        if uid != nil {
            try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                         "this test needs setpriv from util-linux: apt-get install util-linux")
        }
        finger.present(prints)
        let finger = self.finger
        return try await client(as: uid).run(arguments, stdin: stdin) { line, _ in finger.handle(line) }
    }

    /// `arguments` with the passphrase on standard input (`--passphrase-fd 0`).
    func withPassphrase(_ arguments: [String], presenting prints: [String] = [],
                        as uid: UInt32? = nil) async throws -> CLIResult {
        try await run(arguments + ["--passphrase-fd", "0"], presenting: prints,
                      stdin: Data((Self.passphrase + "\n").utf8), as: uid)
    }

    /// A vault (minimum Argon2id cost), unlocked, with whorl enrolled as right-index.
    func initialize(as uid: UInt32? = nil) async throws {
        let enrolled = try await run(["enroll", "--json", "--finger", "right-index"], presenting: ["whorl"], as: uid)
        #expect(enrolled.status == 0, "enroll: \(enrolled.stderrLines)\n\(daemonLog)")
        let made = try await withPassphrase(["init", "--kdf", "minimum"], as: uid)
        #expect(made.status == 0, "init: \(made.stderrLines)\n\(daemonLog)")
    }
}
