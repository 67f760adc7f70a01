import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A ``VaultRig`` with the helpers on PATH (symlinks to the built touchgate named
/// `touchgate-askpass`, `git-credential-touchgate`, `pinentry-touchgate`) and the real
/// programs that run them (ssh-add, ssh-agent, git, gpg-agent, pass), started with the
/// vault's environment so their helpers reach it.
struct HelperRig {
    let vault: VaultRig

    init() throws {
        vault = try VaultRig()
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for name in ["touchgate", "touchgate-askpass", "git-credential-touchgate", "pinentry-touchgate"] {
            try FileManager.default.createSymbolicLink(atPath: bin + "/" + name, withDestinationPath: CLIProcess.binary)
        }
    }

    var home: TemporaryDirectory { vault.home }
    var bin: String { home.path("bin") }

    /// The environment every program gets: the vault's (personal mode), PATH with the helpers first.
    var environment: [String: String] {
        var environment = vault.rig.process.environment
        environment["PATH"] = bin + ":/usr/bin:/bin"
        environment["TOUCHGATE_SOCKET"] = ""
        return environment
    }

    /// A shell as a person has it: a private `XDG_RUNTIME_DIR` (`run` in the home, made
    /// here) and no `TOUCHGATE_SOCKET`, so commands find touchgate agent where it listens.
    func shellEnvironment() throws -> (runtime: String, environment: [String: String]) {
        let runtime = home.path("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var shell = environment
        shell["XDG_RUNTIME_DIR"] = runtime
        shell.removeValue(forKey: "TOUCHGATE_SOCKET")
        return (runtime, shell)
    }

    /// Fails the test, naming the Debian package, when `tool` is missing.
    static func require(_ tool: String, package: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: tool),
                     "this test needs \(tool): apt-get install \(package) (scripts/setup.sh installs it)")
    }

    /// Runs `program` with the rig's environment plus `extra`; the finger answers every
    /// prompt a helper prints on the program's standard error with the next of `prints`.
    func run(_ program: String, _ arguments: [String], extra: [String: String] = [:], stdin: Data? = nil,
             presenting prints: [String] = [], finger: VirtualImageFinger? = nil) async throws -> CLIResult {
        let finger = finger ?? vault.finger
        finger.present(prints)
        var process = CLIProcess(environment: environment.merging(extra) { $1 })
        process.binaryOverride = program
        return try await process.run(arguments, stdin: stdin) { line, _ in finger.handle(line) }
    }

    /// The audit records whose reason mentions `text`.
    func auditRecords(mentioning text: String) async throws -> [[String: Any]] {
        try await vault.auditTrail().filter { ($0["reason"] as? String ?? "").contains(text) }
    }
}

/// A program the test starts and stops (ssh-agent, gpg-agent, a git server), whose standard
/// error lines reach a finger, so helpers it runs can be answered.
final class BackgroundProgram: Sendable {
    private let process: BackgroundProcess
    private let output = LineCollector()
    private let errors = LineCollector()

    /// Starts `program` with `environment`; each standard error line goes to `finger`. A
    /// program that `forks` on start (gpg-agent 2.2 does, even with --no-detach) runs under
    /// sh, its outputs (both, on standard output) read through cat, which stays until the
    /// forked process closes them: swift-subprocess stops reading once the program it
    /// started has ended. Everything runs in a process group of its own, stopped as one.
    init(_ program: String, _ arguments: [String], environment: [String: String],
         finger: VirtualImageFinger?, forks: Bool = false) async throws {
        let (output, errors) = (output, errors)
        let (executable, command) = forks
            ? ("/bin/sh", ["-c", #""$@" 2>&1 | cat"#, "sh", program] + arguments)
            : (program, arguments)
        process = try await BackgroundProcess.start(executable, command, environment: environment, ownGroup: true,
                                                    output: .lines { line in
                                                        output.append(line)
                                                        finger?.handle(line)
                                                    },
                                                    error: .lines { line in
                                                        errors.append(line)
                                                        finger?.handle(line)
                                                    })
    }

    /// The first line of standard output (a server's port), waited for up to 10 s.
    func firstOutputLine() async -> String? {
        for _ in 0..<500 {
            if let line = output.lines.first { return line }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Its process id (setpriv's, which becomes the program it runs).
    var pid: Int32 { process.processIdentifier }

    /// Its standard error so far (an agent's log).
    var errorLines: [String] { errors.lines }

    /// Stops it (SIGKILL to its group) and waits until it has ended.
    func stop() async {
        await process.terminate()
    }

    /// ``stop()`` where nothing may be awaited (a `defer`).
    func stopNow() {
        process.stop()
    }
}

/// Waits up to 10 s until a Unix socket at `path` accepts connections (a program binds it
/// before it listens, so the file alone is not enough).
func waitForSocket(_ path: String) async throws {
    for _ in 0..<200 {
        if acceptsConnections(path) { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("\(path) did not accept connections within 10 s")
    throw POSIXError(.ETIMEDOUT)
}

private func acceptsConnections(_ path: String) -> Bool {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: path.utf8)
        raw[path.utf8.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    } == 0
}
