public import Foundation
import Subprocess
// FilePath and FileDescriptor, which swift-subprocess takes.
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A program a test keeps running beside it (a daemon, a bus, an agent, a server, an
/// attacker's script), started and reaped by swift-subprocess, which also resets the signal
/// mask and dispositions the program inherits. Its standard input is /dev/null, or a pipe
/// held open until it is stopped (for a program that waits for the end of its input); each of
/// its outputs goes to a file, line by line to a closure, or nowhere. Dropping it kills it.
public final class BackgroundProcess: @unchecked Sendable {
    // @unchecked Sendable: `status` and `waiters` are only touched under `lock`; the rest
    // is set once in init.

    /// Where one of the program's outputs goes.
    public enum Destination: Sendable {
        /// /dev/null.
        case discarded
        /// Appended to the file at this path (made if missing), written by the program itself,
        /// so that what it wrote is there the moment it has written it.
        case file(String)
        /// Each line, without its newline, as soon as it is complete (the last one even
        /// without a newline).
        case lines(@Sendable (String) -> Void)
        /// The bytes as they arrive (a terminal's screen, where a prompt ends no line).
        case chunks(@Sendable ([UInt8]) -> Void)
        /// Standard error only: wherever standard output goes.
        case sameAsOutput
    }

    /// The program's process id.
    public let processIdentifier: Int32
    /// Whether it leads a process group of its own, which every signal goes to.
    private let leadsGroup: Bool
    /// A duplicate of the process's pidfd: readable once the process has ended, whoever
    /// reaps it, and never another process's (a pid can be reused; a pidfd cannot).
    private let descriptor: Int32
    /// The writing end of its standard input, when held open; closed by `stop`.
    private let heldInput = HeldDescriptor()
    private let lock = NSLock()
    private var status: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []

    private init(processIdentifier: Int32, descriptor: Int32, leadsGroup: Bool) {
        self.processIdentifier = processIdentifier
        self.descriptor = descriptor
        self.leadsGroup = leadsGroup
    }

    deinit {
        // A test that failed before stopping it: nothing it started outlives it.
        stop(signal: SIGKILL)
        close(descriptor)
        heldInput.close()
    }

    /// Starts `executable` with `arguments` and exactly `environment`, and returns once it runs.
    /// With `ownGroup` it leads a new process group and every signal goes to the group: what
    /// it forks is stopped with it.
    public static func start(_ executable: String, _ arguments: [String], environment: [String: String],
                             workingDirectory: String? = nil, ownGroup: Bool = false, holdingInputOpen: Bool = false,
                             output: Destination = .discarded,
                             error: Destination = .discarded) async throws -> BackgroundProcess {
        let configuration = Configuration(
            executable: .path(FilePath(executable)),
            arguments: Arguments(arguments),
            // As C strings: swift-subprocess 1.0.2 passes each entry to strdup as it is.
            environment: .custom(environment.map { Array("\($0.key)=\($0.value)".utf8) + [0] }),
            workingDirectory: workingDirectory.map { FilePath($0) },
            platformOptions: {
                var options = PlatformOptions()
                if ownGroup { options.processGroupID = 0 }
                return options
            }())
        let started = Started()
        let (input, held) = try standardInput(piped: holdingInputOpen)
        let out = consumer(output), err = consumer(error)
        return try await withCheckedThrowingContinuation { continuation in
            started.set(continuation)
            Task.detached {
                do {
                    let ends = (input: input, held: held, started: started, ownGroup: ownGroup)
                    switch (out, error, err) {
                    case (let out?, _, let err?):
                        try await launch(configuration, ends, output: .sequence, error: .sequence) { execution in
                            let (stdout, stderr) = (execution.standardOutput, execution.standardError)
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                group.addTask { try await out(stdout) }
                                group.addTask { try await err(stderr) }
                                try await group.waitForAll()
                            }
                        }
                    case (let out?, .sameAsOutput, nil):
                        try await launch(configuration, ends, output: .sequence, error: .combinedWithOutput) {
                            try await out($0.standardOutput)
                        }
                    case (let out?, _, nil):
                        try await launch(configuration, ends, output: .sequence, error: try file(error)) {
                            try await out($0.standardOutput)
                        }
                    case (nil, _, let err?):
                        try await launch(configuration, ends, output: try file(output), error: .sequence) {
                            try await err($0.standardError)
                        }
                    case (nil, .sameAsOutput, nil):
                        try await launch(configuration, ends, output: try file(output), error: .combinedWithOutput) { _ in }
                    case (nil, _, nil):
                        try await launch(configuration, ends, output: try file(output), error: try file(error)) { _ in }
                    }
                } catch {
                    try? held?.close()
                    started.fail(error)
                }
            }
        }
    }

    /// What reads an output sent to a closure; nil for one the program writes itself.
    private static func consumer(_ destination: Destination) -> (@Sendable (SubprocessOutputSequence) async throws -> Void)? {
        switch destination {
        case .lines(let body):
            return { sequence in
                for try await line in sequence.strings(separatedBy: .unicodeScalarSequence(["\n"]),
                                                       bufferingPolicy: .unbounded) {
                    body(line)
                }
            }
        case .chunks(let body):
            return { sequence in
                for try await buffer in sequence {
                    body(buffer.withUnsafeBytes { Array($0) })
                }
            }
        case .discarded, .file, .sameAsOutput:
            return nil
        }
    }

    /// Runs the program to its end: resumes `started` as soon as it runs, then relays its
    /// output, then records how it ended.
    private static func launch<Output: OutputProtocol, Error: ErrorOutputProtocol>(
        _ configuration: Configuration,
        _ ends: (input: FileDescriptorInput, held: FileDescriptor?, started: Started, ownGroup: Bool),
        output: Output, error: Error, relay: (Execution<FileDescriptorInput, Output, Error>) async throws -> Void
    ) async throws {
        let (input, held, started, ownGroup) = ends
        let result = try await Subprocess.run(configuration, input: input, output: output,
                                              error: error) { execution in
            // Held weakly here, so that a test dropping it kills the program (deinit).
            let owner = { () -> Owner in
                let identifier = execution.processIdentifier
                let process = BackgroundProcess(processIdentifier: identifier.value,
                                                descriptor: fcntl(identifier.processDescriptor, F_DUPFD_CLOEXEC, 0),
                                                leadsGroup: ownGroup)
                process.heldInput.set(held)
                started.succeed(process)
                return Owner(process)
            }()
            // An output closed early (the program handed it on, or closed it) is no failure.
            try? await relay(execution)
            return owner
        }
        switch result.terminationStatus {
        case .exited(let code): result.closureResult.process?.ended(code)
        case .signaled(let signal): result.closureResult.process?.ended(128 + signal)
        }
    }

    private static func file(_ destination: Destination) throws -> FileDescriptorOutput {
        let path = if case .file(let path) = destination { path } else { "/dev/null" }
        let descriptor = try FileDescriptor.open(FilePath(path), .writeOnly,
                                                 options: [.append, .create, .closeOnExec],
                                                 permissions: [.ownerReadWrite, .groupRead, .otherRead])
        return .fileDescriptor(descriptor, closeAfterSpawningProcess: true)
    }

    private func ended(_ status: Int32) {
        let waiting = lock.withLock {
            self.status = status
            defer { waiters = [] }
            return waiters
        }
        waiting.forEach { $0.resume(returning: status) }
    }

    /// Whether the process has not ended yet.
    public var isRunning: Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    /// Sends `signal`, unless the process has ended (to its group, when it leads one: there
    /// may be more in it than the leader).
    public func send(_ signal: Int32) {
        if leadsGroup {
            kill(-processIdentifier, signal)
        } else if isRunning {
            kill(processIdentifier, signal)
        }
    }

    /// How it ended (its exit status, or 128 + the signal that ended it), once it has and
    /// its outputs are closed (a line relay has read to their end).
    public func ended() async -> Int32 {
        await withCheckedContinuation { continuation in
            let known: Int32? = lock.withLock {
                if status == nil { waiters.append(continuation) }
                return status
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    /// Sends `signal` and waits until the process has ended, up to `seconds` (then SIGKILL).
    /// Usable where nothing may be awaited (`defer`, `deinit`): it waits on the pidfd, not on
    /// the task that reaps, so it needs no other thread of the cooperative pool.
    public func stop(signal: Int32 = SIGKILL, seconds: Double = 10) {
        heldInput.close()
        send(signal)
        waitUntilEnded(seconds: seconds)
    }

    /// Waits, blocking, until the process has ended, up to `seconds` (then SIGKILL).
    public func waitUntilEnded(seconds: Double) {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        if poll(&entry, 1, Int32(seconds * 1000)) == 0 {
            kill(processIdentifier, SIGKILL)
            _ = poll(&entry, 1, -1)
        }
    }

    /// Writes `text` to the standard input held open (`holdingInputOpen`).
    public func write(_ text: String) throws {
        try heldInput.write(Array(text.utf8))
    }

    /// Closes the standard input held open: the program reads its end.
    public func closeInput() {
        heldInput.close()
    }

    /// Waits until the process has ended (on the pidfd: what its descendants do with its
    /// outputs does not hold this up, unlike ``ended()``).
    public func exited() async {
        while isRunning { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// Stops it with `signal` and waits until it has ended.
    public func terminate(signal: Int32 = SIGKILL) async {
        heldInput.close()
        send(signal)
        await exited()
    }
}

/// The start of a background process: resumed once, with the process or with why it did not start.
private final class Started: @unchecked Sendable {
    // @unchecked Sendable: `continuation` is only touched under `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<BackgroundProcess, any Error>?

    func set(_ continuation: CheckedContinuation<BackgroundProcess, any Error>) {
        lock.withLock { self.continuation = continuation }
    }

    func succeed(_ process: BackgroundProcess) {
        take()?.resume(returning: process)
    }

    func fail(_ error: any Error) {
        take()?.resume(throwing: error)
    }

    private func take() -> CheckedContinuation<BackgroundProcess, any Error>? {
        lock.withLock {
            defer { continuation = nil }
            return continuation
        }
    }
}

/// A weak reference to a background process, for the task that runs it.
private final class Owner: @unchecked Sendable {
    // @unchecked Sendable: a weak reference, read once the run has ended.
    weak var process: BackgroundProcess?

    init(_ process: BackgroundProcess) { self.process = process }
}

/// A descriptor closed once, by whichever comes first.
private final class HeldDescriptor: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` is only touched under `lock`.
    private let lock = NSLock()
    private var descriptor: FileDescriptor?

    func set(_ descriptor: FileDescriptor?) {
        lock.withLock { self.descriptor = descriptor }
    }

    func write(_ bytes: [UInt8]) throws {
        try lock.withLock {
            guard let descriptor else { throw Errno.badFileDescriptor }
            _ = try descriptor.writeAll(bytes)
        }
    }

    func close() {
        let taken = lock.withLock {
            defer { descriptor = nil }
            return descriptor
        }
        try? taken?.close()
    }
}
