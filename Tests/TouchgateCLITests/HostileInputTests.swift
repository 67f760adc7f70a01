import Foundation
import Testing
import TouchgateTestSupport

/// Hostile names and concurrent writers.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct HostileInputTests {
    @Test func namesWithEscapeSequencesAreRefusedAndStoredOnesAreShownEscaped() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        for hostile in ["clear\u{1B}[2J\u{1B}[H", "two\nlines", "title\u{1B}]0;pwned\u{07}", "csi\u{9B}31m"] {
            let refused = try await vault.run(["secret", "add", hostile, "--policy", "passphrase"], stdin: Data("v".utf8))
            #expect(refused.status == 64, "\(hostile.debugDescription): \(refused.stderrLines)")
            #expect(!refused.stderrLines.joined().contains("\u{1B}"), "the refusal itself must not echo the escape")
        }
        #expect((try await vault.run(["secret", "list", "--json"]).json?["items"] as? [[String: Any]])?.isEmpty == true)

        // A name planted with sqlite3 is shown escaped by every command that prints it.
        try await vault.add("plain", "v", policy: "passphrase")
        _ = try await vault.sql("UPDATE vault_item SET name = 'x' || char(27) || '[31mred' || char(10) || 'fake line'")
        let list = try await vault.run(["secret", "list"])
        #expect(list.status == 0)
        #expect(!list.stdout.contains("\u{1B}"), "\(list.stdout.debugDescription)")
        #expect(list.stdout.contains("\\u{001B}[31mred\\u{000A}fake line"))
        let shown = try await vault.run(["audit", "show"])
        #expect(!shown.stdout.contains("\u{1B}"))
    }

    @Test func concurrentAddsOfOneNameCannotSkipTheAuthorization() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try #require(try await vault.withPassphrase(["policy", "set", "--lockout-threshold", "20"]).status == 0)
        // Ten writers race to create the same new name; then ten race to replace it.
        let count = 10
        func race(_ prefix: String) async throws -> [CLIResult] {
            try await withThrowingTaskGroup(of: CLIResult.self) { group in
                for index in 0..<count {
                    // Each process gets its own virtual_image socket and a wrong finger.
                    let (process, finger) = vault.ownReader("\(prefix)-\(index)", presenting: ["arch"])
                    group.addTask {
                        try await process.run(["secret", "add", "shared", "--policy", "biometry-any", "--fresh", "--replace", "--json"],
                                              stdin: Data("\(prefix)-\(index)".utf8)) { line, _ in finger.handle(line) }
                    }
                }
                var results: [CLIResult] = []
                for try await result in group { results.append(result) }
                return results
            }
        }
        let created = try await race("first")
        let winners = created.filter { $0.status == 0 }
        #expect(winners.count == 1, "exactly one writer creates the item: \(created.map(\.status))")
        // The others either lost the race to create (conflict) or, coming later, met the
        // item and had to be authorized for a replacement: the wrong finger refused them.
        #expect(created.filter { $0.status != 0 }.allSatisfy { ["conflict", "no-match", "locked-out"].contains($0.errorCode) },
                "\(created.map(\.stderrLines))")
        #expect(try await vault.withPassphrase(["unlock"]).status == 0, "the passphrase lifts the lockout")
        let stored = try await vault.get("shared", presenting: ["whorl"])
        #expect(stored.status == 0)
        let value = stored.released

        // Every replacement must be authorized, and every finger presented now is wrong.
        let replaced = try await race("second")
        #expect(replaced.allSatisfy { $0.status != 0 }, "\(replaced.map(\.status))")
        #expect(try await vault.withPassphrase(["unlock"]).status == 0)
        #expect(try await vault.get("shared", presenting: ["whorl"]).released == value, "the item was not replaced")
        let stores = try await vault.auditTrail().matching(["event": "item.write", "outcome": "success"])
        #expect(stores.count == 1, "one write, one record: \(stores)")
    }
}
