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
                           onStderrLine: @escaping @Sendable (String, RunningProcess) -> Void = { _, _ in })
    async throws -> CLIResult {
        // A child that already ended (killed on purpose, or refused before reading) closed its
        // end: that is the child's outcome to check, not a reason to end the test process.
        // GLib's GSocket (the virtual drivers' sockets, GDBus) ignores SIGPIPE process-wide anyway.
        signal(SIGPIPE, SIG_IGN)
        let collected = LineCollector()
        let timers = Timers()
        defer { timers.cancel() }
        let result = try await Subprocess.run(
            .path(FilePath(executable)),
            arguments: Arguments(arguments),
            // As C strings: swift-subprocess 1.0.2 passes each entry to strdup as it is, so
            // one without its NUL reads on past the array (Environment.Key has no public
            // initialiser from a String for the other form).
            environment: .custom(environment.map { Array("\($0.key)=\($0.value)".utf8) + [0] }),
            input: .array(Array(stdin ?? Data())),
            output: .string(limit: 1 << 26),
            error: .sequence
        ) { execution in
            let process = RunningProcess(processIdentifier: execution.processIdentifier.value)
            // Until the process has ended, not only its standard error: both are cancelled after the run.
            timers.add(after: timeout, process)
            if let killAfter { timers.add(after: killAfter, process) }
            for try await line in execution.standardError.strings(separatedBy: .unicodeScalarSequence(["\n"]),
                                                                  bufferingPolicy: .unbounded) {
                collected.append(line)
                onStderrLine(line, process)
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
