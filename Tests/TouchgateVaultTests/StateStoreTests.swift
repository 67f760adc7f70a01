import Foundation
import Subprocess
// FilePath, which swift-subprocess takes.
import SystemPackage
import Testing
@testable import TouchgateVault

@Suite("Persisted state")
struct StateStoreTests {
    /// Adds one to the little-endian counter under `key`.
    static func increment(_ state: StateStore, _ key: String) throws {
        try state.updateState(key) { value in
            var count: UInt64 = 0
            if let value { count = value.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } }
            count += 1
            value = withUnsafeBytes(of: count) { Data($0) }
        }
    }

    static func count(_ state: StateStore, _ key: String) throws -> UInt64 {
        try state.state(key).map { $0.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } } ?? 0
    }

    @Test("updates return the body's result, nil deletes, a throwing body writes nothing")
    func basics() throws {
        let store = try TemporaryStore()
        let state = StateStore(database: store.database)
        #expect(try state.state("lockout") == nil)
        let old = try state.updateState("lockout") { value -> Data? in
            defer { value = Data("{\"failures\":1}".utf8) }
            return value
        }
        #expect(old == nil)
        #expect(try state.state("lockout") == Data("{\"failures\":1}".utf8))
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try state.updateState("lockout") { value in
                value = Data("changed".utf8)
                throw Abort()
            }
        }
        #expect(try state.state("lockout") == Data("{\"failures\":1}".utf8))
        try state.updateState("lockout") { $0 = nil }
        #expect(try state.state("lockout") == nil)
    }

    @Test("concurrent updates from many tasks are all counted")
    func concurrentTasks() async throws {
        let store = try TemporaryStore()
        // Separate database handles too: separate connection pools, as separate processes would have.
        let other = try TouchgateDatabase(location: store.location)
        let tasks = 16, perTask = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<tasks {
                let state = StateStore(database: index % 2 == 0 ? store.database : other)
                group.addTask {
                    for _ in 0..<perTask { try Self.increment(state, "counter") }
                }
            }
            try await group.waitForAll()
        }
        #expect(try Self.count(StateStore(database: store.database), "counter") == UInt64(tasks * perTask))
    }

    /// Set in child processes started by ``concurrentProcesses()``: the data directory to count in.
    static let workerDirectoryVariable = "TOUCHGATE_STATE_WORKER_DIR"
    static let perProcess = 40

    @Test("one counting process (also run alone: it then counts in its own store)")
    func workerProcess() throws {
        let environment = ProcessInfo.processInfo.environment
        if let directory = environment[Self.workerDirectoryVariable] {
            let database = try TouchgateDatabase(location: StoreLocation(directory: URL(fileURLWithPath: directory)))
            for _ in 0..<Self.perProcess { try Self.increment(StateStore(database: database), "counter") }
        } else {
            let store = try TemporaryStore()
            let state = StateStore(database: store.database)
            for _ in 0..<Self.perProcess { try Self.increment(state, "counter") }
            #expect(try Self.count(state, "counter") == UInt64(Self.perProcess))
        }
    }

    @Test("concurrent updates from several processes and tasks are all counted", .timeLimit(.minutes(2)))
    func concurrentProcesses() async throws {
        guard ProcessInfo.processInfo.environment[Self.workerDirectoryVariable] == nil else { return }
        let store = try TemporaryStore()
        // This test binary again, running only `workerProcess` against our directory.
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let directory = store.location.directory.path
        // Each worker's output is kept, shown if it fails.
        let workers = 4
        async let ended = withThrowingTaskGroup(of: (TerminationStatus, String).self) { group in
            for _ in 0..<workers {
                group.addTask {
                    let run = try await Subprocess.run(
                        .path(FilePath(executable)),
                        arguments: ["--testing-library", "swift-testing", "--filter", "StateStoreTests/workerProcess"],
                        environment: .inherit.updating(["TOUCHGATE_STATE_WORKER_DIR": directory]),
                        output: .string(limit: 1 << 22), error: .combinedWithOutput)
                    return (run.terminationStatus, run.standardOutput)
                }
            }
            return try await group.reduce(into: [(TerminationStatus, String)]()) { $0.append($1) }
        }
        let tasks = 4
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                let state = StateStore(database: store.database)
                group.addTask {
                    for _ in 0..<Self.perProcess { try Self.increment(state, "counter") }
                }
            }
            try await group.waitForAll()
        }
        for (status, output) in try await ended {
            #expect(status.isSuccess,
                    "a worker process failed; its output:\n\(output.split(separator: "\n").suffix(20).joined(separator: "\n"))")
        }
        let expected = UInt64((workers + tasks) * Self.perProcess)
        #expect(try Self.count(StateStore(database: store.database), "counter") == expected)
    }
}
