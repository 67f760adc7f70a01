public import Foundation

/// A software TPM (swtpm) of the test's own, on a Unix socket in a temporary directory
/// (no TCP port), and tpm2-tools pointed at it. Fails, saying what to install, when swtpm
/// or tpm2-tools are missing.
public final class SwtpmRig {
    public let directory: URL
    public var socket: String { directory.appendingPathComponent("sock").path }
    /// The tss2 TCTI string for it.
    public var tcti: String { "swtpm:path=\(socket)" }

    public init() throws {
        for tool in ["swtpm", "tpm2_dictionarylockout", "tpm2_shutdown"] {
            guard Self.which(tool) != nil else {
                throw SwtpmRigError("\(tool) is missing: install swtpm and tpm2-tools (apt-get install swtpm swtpm-tools tpm2-tools)")
            }
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-swtpm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try start()
    }

    deinit {
        kill9()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts swtpm on the state directory (a power-on).
    public func start() throws {
        try? FileManager.default.removeItem(atPath: socket)
        try Self.run("swtpm", ["socket", "--tpm2", "--tpmstate", "dir=\(directory.path)",
                               "--server", "type=unixio,path=\(socket)", "--ctrl", "type=unixio,path=\(socket).ctrl",
                               "--flags", "not-need-init,startup-clear", "--daemon",
                               "--pid", "file=\(directory.appendingPathComponent("pid").path)"])
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard Date() < deadline else { throw SwtpmRigError("swtpm did not open \(socket) within 10 s") }
            usleep(20_000)
        }
    }

    /// Lets `uid` (a daemon running as its own user) connect: the sockets become its.
    public func allowConnections(from uid: UInt32) {
        chmod(directory.path, 0o755)
        for path in [socket, socket + ".ctrl"] { chown(path, uid, uid) }
    }

    /// A power loss: swtpm killed without TPM2_Shutdown.
    public func kill9() {
        let pidPath = directory.appendingPathComponent("pid").path
        guard let text = try? String(contentsOfFile: pidPath, encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        for _ in 0..<200 where kill(pid, 0) == 0 {
            _ = waitpid(pid, &status, WNOHANG)
            usleep(10_000)
        }
        try? FileManager.default.removeItem(atPath: pidPath)
    }

    /// An orderly shutdown (TPM2_Shutdown), then the process stopped.
    public func shutDownOrderly() throws {
        try tool("tpm2_shutdown", ["-c"])
        kill9()
    }

    /// Dictionary-attack parameters: `tries` failures lock out, one is forgotten every `interval` s.
    public func setDictionaryAttack(tries: Int, interval: Int) throws {
        try tool("tpm2_dictionarylockout", ["-s", "-n", "\(tries)", "-t", "\(interval)", "-l", "\(interval)"])
        try tool("tpm2_dictionarylockout", ["-c"])
    }

    public func tool(_ name: String, _ arguments: [String]) throws {
        try Self.run(name, arguments, environment: ["TPM2TOOLS_TCTI": tcti])
    }

    private static func which(_ tool: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// posix_spawn and waitpid: swtpm --daemon leaves a child holding the output, and
    /// Foundation's Process waits for it in ways a test thread cannot count on.
    private static func run(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-swtpm-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let path = which(tool) ?? tool
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else { throw SwtpmRigError("cannot start \(tool): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw SwtpmRigError("\(tool) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
    }
}

public struct SwtpmRigError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
