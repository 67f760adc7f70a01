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
final class BackgroundProgram: @unchecked Sendable {
    // @unchecked Sendable: `firstLine` is only touched under `lock`; `process` is set in init.
    private let process = Process()
    private let lock = NSLock()
    private var firstLine: String?
    private let lineArrived = DispatchSemaphore(value: 0)

    /// Starts `program` with `environment`; each standard error line goes to `finger`.
    init(_ program: String, _ arguments: [String], environment: [String: String], finger: VirtualImageFinger?) throws {
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        Thread.detachNewThread { [lock, lineArrived] in
            var pending = Data()
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                if let newline = pending.firstIndex(of: 0x0A) {
                    lock.withLock { self.firstLine = String(decoding: pending[..<newline], as: UTF8.self) }
                    lineArrived.signal()
                    break
                }
            }
        }
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = err.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[(newline + 1)...])
                    finger?.handle(line)
                }
            }
        }
    }

    deinit {
        // A test that failed before stop(): no program outlives it.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The first line of standard output (a server's port), waited for up to 10 s off the cooperative pool.
    func firstOutputLine() async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                _ = lineArrived.wait(timeout: .now() + 10)
                continuation.resume(returning: lock.withLock { firstLine })
            }
        }
    }

    /// Stops it and waits off the cooperative pool. SIGKILL: a program started from a
    /// dispatch thread inherits that thread's blocked signals, so SIGTERM may never arrive.
    /// Reaped with waitpid: Foundation's own wait can miss a child that forked and exited.
    func stop() async {
        let pid = process.processIdentifier
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                continuation.resume()
            }
        }
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
