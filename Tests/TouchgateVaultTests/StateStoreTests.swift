import Foundation
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
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var environment = ProcessInfo.processInfo.environment
        environment[Self.workerDirectoryVariable] = store.location.directory.path
        // Each worker's output goes to a file in the store's directory, shown if it fails.
        let processes = try (0..<4).map { index in
            let process = Process()
            process.executableURL = executable
            process.arguments = ["--testing-library", "swift-testing", "--filter", "StateStoreTests/workerProcess"]
            process.environment = environment
            let log = store.location.directory.appendingPathComponent("worker-\(index).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            return (process, log)
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
        for (process, log) in processes {
            process.waitUntilExit()
            let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            #expect(process.terminationStatus == 0,
                    "a worker process failed; its output:\n\(output.split(separator: "\n").suffix(20).joined(separator: "\n"))")
        }
        let expected = UInt64((processes.count + tasks) * Self.perProcess)
        #expect(try Self.count(StateStore(database: store.database), "counter") == expected)
    }
}
