import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Several processes failing at once are all counted: each failure is one IMMEDIATE
/// transaction on the shared state.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ConcurrentProcessTests {
    @Test func concurrentFailuresAreAllCounted() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try #require(try await vault.withPassphrase(["policy", "set", "--lockout-threshold", "10"]).status == 0)
        try await vault.enroll("whorl")
        try await vault.add("shared", "value", policy: "biometry-any", fresh: true)

        // Each process gets its own virtual_image socket (the driver reads it per process).
        let count = 4
        let results = try await withThrowingTaskGroup(of: CLIResult.self) { group in
            for index in 0..<count {
                let (process, finger) = vault.ownReader("reader-\(index)", presenting: ["arch"])
                group.addTask {
                    try await process.run(["secret", "get", "shared", "--json"]) { line, _ in finger.handle(line) }
                }
            }
            var results: [CLIResult] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(results.map(\.status) == Array(repeating: 1, count: count), "\(results.map(\.stderrLines))")
        #expect(results.allSatisfy { $0.fingerPrompts == 1 })
        let lockout = try await vault.lockout()
        #expect(lockout["consecutive-failures"] as? Int == count)
        #expect(lockout["cumulative-failures"] as? Int == count)
        #expect(try await vault.run(["audit", "verify"]).status == 0)
        let failures = try await vault.auditTrail().matching(["event": "auth.attempt", "outcome": "failure"])
        #expect(failures.count == count)
    }

    /// Processes, not threads: eight `touchgate` commands started at once on a data directory
    /// that does not exist yet all open it (no "database is locked", no "mode 755"), and what
    /// they made is private. The in-process race is `ConcurrentOpenTests`.
    @Test func manyCommandsCreatingOneStoreAtOnceAllSucceed() async throws {
        for round in 0..<3 {
            let vault = try VaultRig()
            defer { vault.home.remove() }
            let results = try await withThrowingTaskGroup(of: CLIResult.self) { group in
                for _ in 0..<8 { group.addTask { try await vault.rig.process.run(["prints", "list", "--json"]) } }
                var results: [CLIResult] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(results.map(\.status) == Array(repeating: 0, count: 8),
                    "round \(round): \(results.filter { $0.status != 0 }.map(\.stderrLines))")
            var info = stat()
            #expect(lstat(vault.rig.dataDirectory, &info) == 0 && info.st_mode & 0o777 == 0o700)
            #expect(lstat(vault.databasePath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        }
    }
}
