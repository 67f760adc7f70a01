import Foundation
import Subprocess
// FilePath, which swift-subprocess takes.
import SystemPackage
import Testing
@testable import TouchgateVault

/// Several processes append to one log at once: SQLite's file locks, not an in-process
/// lock, must keep the chain from forking. The test re-runs this test binary as the
/// child processes, each running only ``childAppends()``.
@Suite("Audit appends from several processes")
struct AuditMultiProcessTests {
    private static let directoryVariable = "TOUCHGATE_AUDIT_CHILD_DIR"
    private static let childCount = 3
    private static let perChild = 20

    @Test("three processes and this one append concurrently: one gapless chain", .timeLimit(.minutes(2)))
    func processes() async throws {
        let fixture = try AuditFixture()
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let directory = fixture.location.directory.path
        let statuses = try await withThrowingTaskGroup(of: TerminationStatus.self) { group in
            for child in 0..<Self.childCount {
                group.addTask {
                    try await Subprocess.run(
                        .path(FilePath(executable)),
                        arguments: ["--testing-library", "swift-testing", "--filter", "AuditMultiProcessTests/childAppends"],
                        environment: .inherit.updating(["TOUCHGATE_AUDIT_CHILD_DIR": directory,
                                                        "TOUCHGATE_AUDIT_CHILD_ID": String(child)]),
                        output: .discarded).terminationStatus
                }
            }
            for index in 0..<Self.perChild {
                try fixture.log.append(.itemRead, .success, vaultUser: "parent", item: "i\(index)")
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for status in statuses {
            #expect(status.isSuccess, "child test process failed (\(status)); run it alone with --filter AuditMultiProcessTests/childAppends")
        }
        let total = (Self.childCount + 1) * Self.perChild
        #expect(try fixture.log.verify() == .intact(count: total))
        let records = try fixture.log.records()
        #expect(records.map(\.sequence) == Array(1...Int64(total)))
        for child in 0..<Self.childCount {
            let mine = records.filter { $0.vaultUser == "child-\(child)" }
            #expect(mine.count == Self.perChild)
        }
        #expect(Set(records.compactMap { $0.reason.split(separator: " ").last }).count > 1, "children report their pids")
    }

    /// The child side: runs only inside the processes started by ``processes()``.
    @Test("child process: append to the log named in the environment",
          .enabled(if: ProcessInfo.processInfo.environment[directoryVariable] != nil))
    func childAppends() throws {
        let environment = ProcessInfo.processInfo.environment
        let directory = try #require(environment[Self.directoryVariable])
        let child = environment["TOUCHGATE_AUDIT_CHILD_ID"] ?? "?"
        let log = try AuditLog(database: try TouchgateDatabase(location: StoreLocation(directory: URL(fileURLWithPath: directory))),
                               journal: .disabled)
        for _ in 0..<Self.perChild {
            try log.append(.authAttempt, .failure, vaultUser: "child-\(child)", reason: "pid \(getpid())")
        }
    }
}
