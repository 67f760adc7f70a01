public import Foundation
import Subprocess
// FilePath, which swift-subprocess takes.
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// Runs programs for the tests with swift-subprocess: every `touchgate` of the end-to-end
/// suites goes through here (``CLIProcess``).
public enum ProgramRun {
    /// Runs `executable` with `arguments` and exactly `environment` to its end, writing
    /// `stdin` to its standard input; calls `onStderrLine` with each line of standard error
    /// as soon as it appears. A run that outlives `timeout` is killed (status 128 + 9), so a
    /// hang fails the test instead of stalling it; `killAfter` kills it then on purpose.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                           stdin: Data? = nil, timeout: TimeInterval = 60, killAfter: TimeInterval? = nil,
                           onStderrLine: @escaping @Sendable (String, RunningProcess) async -> Void = { _, _ in })
    async throws -> CLIResult {
        // A child that already ended (killed on purpose, or refused before reading) closed its
        // end: that is the child's outcome to check, not a reason to end the test process.
        // GLib's GSocket (the virtual drivers' sockets, GDBus) ignores SIGPIPE process-wide anyway.
        signal(SIGPIPE, SIG_IGN)
        let collected = LineCollector()
        let timers = Timers()
        defer { timers.cancel() }
        // Standard input is a pipe this function writes, not swift-subprocess's own writer:
        // a child that ends before reading all of it (refused early, killed on purpose) made
        // swift-subprocess 1.0 end the whole test process ("FileDescriptor … was not closed",
        // its issue #367). Here the write just fails, and the writing end is closed.
        let (input, feeder) = try standardInput(piped: !(stdin ?? Data()).isEmpty)
        let typed = Feed(feeder)
        defer { typed.abandon() }
        let result = try await Subprocess.run(
            .path(FilePath(executable)),
            arguments: Arguments(arguments),
            // As C strings: swift-subprocess 1.0.2 passes each entry to strdup as it is, so
            // one without its NUL reads on past the array (Environment.Key has no public
            // initialiser from a String for the other form).
            environment: .custom(environment.map { Array("\($0.key)=\($0.value)".utf8) + [0] }),
            input: input,
            output: .string(limit: 1 << 26),
            error: .sequence
        ) { execution in
            typed.start(Array(stdin ?? Data()))
            let process = RunningProcess(processIdentifier: execution.processIdentifier.value)
            // Until the process has ended, not only its standard error: both are cancelled after the run.
            timers.add(after: timeout, process)
            if let killAfter { timers.add(after: killAfter, process) }
            for try await line in execution.standardError.strings(separatedBy: .unicodeScalarSequence(["\n"]),
                                                                  bufferingPolicy: .unbounded) {
                collected.append(line)
                await onStderrLine(line, process)
            }
        }
        let status: Int32
        switch result.terminationStatus {
        case .exited(let code): status = code
        case .signaled(let signal): status = 128 + signal
        }
        return CLIResult(status: status, stdout: result.standardOutput, stderrLines: collected.lines)
    }
}

/// A child's standard input: a pipe whose writing end is returned (`piped`), else /dev/null.
/// Both ends are close-on-exec; swift-subprocess closes the reading end once the child runs.
func standardInput(piped: Bool) throws -> (FileDescriptorInput, FileDescriptor?) {
    guard piped else {
        let null = try FileDescriptor.open("/dev/null", .readOnly, options: [.closeOnExec])
        return (.fileDescriptor(null, closeAfterSpawningProcess: true), nil)
    }
    let (reading, writing) = try FileDescriptor.pipe()
    for end in [reading, writing] { _ = fcntl(end.rawValue, F_SETFD, FD_CLOEXEC) }
    return (.fileDescriptor(reading, closeAfterSpawningProcess: true), writing)
}

/// The writing end of a child's standard input, written on a thread of its own (the
/// write blocks while the pipe is full) and closed once written, or unused, by
/// ``abandon()``. `@unchecked Sendable`: `descriptor` is only touched under `lock`.
private final class Feed: @unchecked Sendable {
    private let lock = NSLock()
    private var descriptor: FileDescriptor?

    init(_ descriptor: FileDescriptor?) { self.descriptor = descriptor }

    /// Writes `bytes` and closes the end; a child gone already makes the write fail, quietly.
    func start(_ bytes: [UInt8]) {
        guard let end = lock.withLock({ () -> FileDescriptor? in
            defer { descriptor = nil }
            return descriptor
        }) else { return }
        let thread = Thread {
            _ = try? bytes.withUnsafeBytes { try end.writeAll($0) }
            try? end.close()
        }
        thread.start()
    }

    /// Closes the end if ``start(_:)`` never took it (the run failed before its body).
    func abandon() {
        lock.withLock {
            try? descriptor?.close()
            descriptor = nil
        }
    }
}

/// Runs a program to its end (killed after `timeout` seconds), standard input empty, with
/// this process's environment and `environment` (only `environment` when not `inheriting`).
public func runProgram(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                       inheriting: Bool = true, timeout: TimeInterval = 60)
async throws -> (status: Int32, stdout: String, stderr: String) {
    let full = inheriting ? ProcessInfo.processInfo.environment.merging(environment) { $1 } : environment
    let result = try await ProgramRun.run(executable, arguments, environment: full, timeout: timeout)
    return (result.status, result.stdout, result.stderrLines.map { $0 + "\n" }.joined())
}

/// Runs a program to its end where nothing can be awaited (a `deinit` or a `defer` that
/// cleans up: `userdel`, `umount`), blocking this thread; standard input and outputs are
/// /dev/null; returns the exit status (128 + signal when killed). Spawned with posix_spawn
/// and reaped with waitpid: swift-subprocess has no call that does not suspend.
@discardableResult
public func runToEndBlocking(_ executable: String, _ arguments: [String]) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for descriptor: Int32 in [0, 1, 2] {
        posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
    }
    func copies(_ texts: [String]) -> [UnsafeMutablePointer<CChar>?] {
        texts.map { (text: String) -> UnsafeMutablePointer<CChar>? in strdup(text) } + [nil]
    }
    let argv = copies([executable] + arguments)
    let envp = copies(["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"])
    defer { (argv + envp).forEach { free($0) } }
    var pid = pid_t()
    guard posix_spawn(&pid, executable, &actions, nil, argv, envp) == 0 else { return 127 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
}

/// A process a test runs, to signal while it runs.
public struct RunningProcess: Sendable {
    public let processIdentifier: Int32
}

/// SIGKILLs a process at a moment, unless cancelled first.
final class Timers: @unchecked Sendable {
    // @unchecked Sendable: `tasks` is only touched under `lock`.
    private let lock = NSLock()
    private var tasks: [Task<Void, Never>] = []

    func add(after seconds: TimeInterval, _ process: RunningProcess) {
        let task = Task {
            guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
            kill(process.processIdentifier, SIGKILL)
        }
        lock.withLock { tasks.append(task) }
    }

    func cancel() {
        lock.withLock { tasks }.forEach { $0.cancel() }
    }
}
