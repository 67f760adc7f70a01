public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a finished `touchgate` run produced.
public struct CLIResult: Sendable {
    /// Exit status (or 128 + signal).
    public let status: Int32
    /// Everything on standard output.
    public let stdout: String
    /// Standard error, line by line.
    public let stderrLines: [String]

    /// Standard error lines that are JSON objects, parsed.
    public var events: [[String: Any]] {
        stderrLines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// The names of the JSON events on standard error, in order.
    public var eventNames: [String] { events.compactMap { $0["event"] as? String } }

    /// Standard output parsed as one JSON object.
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any]
    }
}

/// Runs the built `touchgate` binary with a private environment.
public struct CLIProcess: Sendable {
    /// The binary next to the test bundle (both are in the build's products directory).
    public static var binary: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test executable may sit inside TouchgatePackageTests.xctest/.
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("touchgate").path),
              directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("touchgate").path
    }

    /// Environment for every run (HOME, XDG_DATA_HOME, FP_* …); PATH is added.
    public var environment: [String: String]
    /// Wraps the command, e.g. `["umockdev-run", "-d", …, "--"]`.
    public var wrapper: [String] = []
    /// Another `touchgate` binary to run (a copy that other users may execute).
    public var binaryOverride: String?

    /// A runner with `environment`.
    public init(environment: [String: String]) {
        self.environment = environment
    }

    /// Runs `touchgate arguments`, writing `stdin` to its standard input, and calls
    /// `onStderrLine` for every line it prints on standard error as soon as it appears (with
    /// the running process, so that a test can signal it). A run that outlives `timeout` is
    /// killed (status 128 + 9), so a hang fails the test instead of stalling it; `killAfter`
    /// kills it with SIGKILL at that moment on purpose.
    public func run(_ arguments: [String], stdin: Data? = nil, timeout: TimeInterval = 60,
                    killAfter: TimeInterval? = nil,
                    onStderrLine: @escaping @Sendable (String, RunningProcess) async -> Void = { _, _ in }) async throws -> CLIResult {
        var env = environment
        env["PATH"] = env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        return try await ProgramRun.run("/usr/bin/env", wrapper + [binaryOverride ?? Self.binary] + arguments,
                                        environment: env, stdin: stdin, timeout: timeout, killAfter: killAfter,
                                        onStderrLine: onStderrLine)
    }
}

/// Lines gathered from another thread.
public final class LineCollector: @unchecked Sendable {
    // @unchecked Sendable: `storage` is only touched under `lock`.
    private let lock = NSLock()
    private var storage: [String] = []

    public init() {}

    public func append(_ line: String) {
        lock.lock()
        storage.append(line)
        lock.unlock()
    }

    public var lines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

/// A virtual_image reader for end-to-end runs: a socket path in a private HOME, and a
/// finger that answers each `finger-needed` prompt with the next image.
public final class VirtualImageFinger: @unchecked Sendable {
    // @unchecked Sendable: `client` and `queue` are only touched under `lock`.
    /// The socket libfprint's virtual_image driver listens on.
    public let socketPath: String
    private let lock = NSLock()
    private var client: VirtualImageClient?
    private var queue: [GreyImageName] = []
    /// How many prompts were answered.
    public private(set) var prompts = 0

    /// An image to present, by fixture name.
    public typealias GreyImageName = String

    /// A finger for the socket at `socketPath`.
    public init(socketPath: String) { self.socketPath = socketPath }

    /// Present these prints, one per prompt (the last one repeats).
    public func present(_ names: [String]) {
        lock.lock()
        queue = names
        prompts = 0
        client = nil  // the driver listens anew for every process
        lock.unlock()
    }

    /// Feeds the next image when `line` is a `finger-needed` event.
    public func handle(_ line: String) {
        guard Self.isPrompt(line) else { return }
        presentNext()
    }

    /// Drops the connection to the reader: the next image goes over a new one. For a reader
    /// now held by another process (the driver listens anew in each).
    public func reconnect() {
        lock.withLock { client = nil }
    }

    /// Feeds the next image now (the reader must be waiting for a finger).
    public func presentNext() {
        lock.lock()
        defer { lock.unlock() }
        guard !queue.isEmpty else { return }
        let name = queue.count > 1 ? queue.removeFirst() : queue[0]
        prompts += 1
        do {
            let image = try Fixtures.print(name)
            // A connection the driver closed (the reader was closed and opened again since, as
            // the personal agent does between requests) would swallow the image: connect anew.
            if client == nil || client?.isClosedByDriver == true { client = try VirtualImageClient(socketPath: socketPath) }
            do {
                try client?.send(image: image)
            } catch {
                // The reader was closed and opened again since (one client, several requests):
                // the driver listens anew, so connect anew.
                client = try VirtualImageClient(socketPath: socketPath)
                try client?.send(image: image)
            }
        } catch {
            FileHandle.standardError.write(Data("virtual finger: \(error)\n".utf8))
        }
    }

    /// Whether `line` asks for a finger, in JSON or in text.
    public static func isPrompt(_ line: String) -> Bool {
        line.contains("\"event\":\"finger-needed\"") || line.hasPrefix("Place your") || line.hasPrefix("Swipe your")
    }

    /// Answers the current wait with a poor scan (libfprint's retry `code`, 0 general),
    /// on the current connection (connecting if needed).
    public func retry(_ code: Int32 = 0) throws {
        lock.lock()
        defer { lock.unlock() }
        if client == nil { client = try VirtualImageClient(socketPath: socketPath) }
        try client?.sendRetry(code)
    }

    /// Sends an unplug command on the current connection (connecting if needed).
    public func unplug() throws {
        lock.lock()
        defer { lock.unlock() }
        if client == nil { client = try VirtualImageClient(socketPath: socketPath) }
        try client?.unplug()
    }
}
