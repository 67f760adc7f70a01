import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Replacing an item needs what reading it needs; a cancelled touch is not a failure.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct SecretUpdateTests {
    @Test func replacingALiveItemNeedsItsCurrentPolicy() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("deploy-key", "original", policy: "biometry-any", fresh: true)

        // Without a terminal to confirm on, an existing name is kept unless --replace.
        let kept = try await vault.runWithoutTerminal(["secret", "add", "deploy-key", "--policy", "passphrase", "--json"],
                                                      stdin: Data("attacker".utf8))
        #expect(kept.status == 9, "\(kept.stderrLines)")
        #expect(kept.errorCode == "already-exists")
        let refused = try await vault.run(["secret", "add", "deploy-key", "--policy", "passphrase", "--replace", "--json"],
                                          presenting: ["arch"], stdin: Data("attacker".utf8))
        #expect(refused.status == 1, "\(refused.stderrLines)")
        #expect(refused.fingerPrompts == 1)
        let unchanged = try await vault.get("deploy-key", presenting: ["whorl"])
        #expect(unchanged.released == "original")
        let list = try await vault.run(["secret", "list", "--json"])
        #expect((list.json?["items"] as? [[String: Any]])?.first?["policy"] as? String == "biometry-any")

        let replaced = try await vault.run(["secret", "add", "deploy-key", "--policy", "biometry-any", "--replace", "--json"],
                                           presenting: ["whorl"], stdin: Data("rotated".utf8))
        #expect(replaced.status == 0, "\(replaced.stderrLines)")
        #expect(try await vault.get("deploy-key", presenting: ["whorl"]).released == "rotated")
        let trail = try await vault.run(["audit", "export"]).stdout
        let records = try await vault.auditTrail()
        #expect(!records.matching(["event": "item.write", "item": "deploy-key", "outcome": "failure"]).isEmpty)
        #expect(!records.matching(["event": "policy.change", "item": "deploy-key"]).isEmpty)
        #expect(!trail.contains("attacker") && !trail.contains("rotated") && !trail.contains("original"))
    }

    @Test func loosenedPolicyColumnFailsClosedAndIsAudited() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("root-password", "p4ss", policy: "passphrase", fresh: true)
        // Someone with the database file turns the passphrase item into a touch-only one.
        _ = try await vault.sql("UPDATE vault_item SET policy = 'biometry-any' WHERE name = 'root-password'")
        let result = try await vault.get("root-password", presenting: ["whorl"])
        #expect(result.status == 6, "\(result.stderrLines)")
        #expect(result.errorCode == "integrity")
        #expect(!result.stdout.contains("p4ss"))
        #expect(!(try await vault.auditTrail()).matching(["event": "integrity.failure", "item": "root-password"]).isEmpty)
        #expect(try await vault.run(["audit", "verify"]).status == 0)
    }

    @Test func ctrlCWhileWaitingForATouchIsNotCountedAsAFailure() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "value", policy: "biometry-any")
        vault.finger.present([])
        let started = Date()
        let result = try await vault.rig.process.run(["secret", "get", "token", "--json"]) { line, process in
            if VirtualImageFinger.isPrompt(line) { kill(process.processIdentifier, SIGINT) }
        }
        #expect(result.status == 130, "\(result.stderrLines)")
        #expect(result.errorCode == "cancelled")
        #expect(Date().timeIntervalSince(started) < 10)
        let lockout = try await vault.lockout()
        #expect(lockout["consecutive-failures"] as? Int == 0)
        let trail = try await vault.run(["audit", "export"]).stdout
        #expect(trail.contains("cancelled (not counted)"))
        // The reader was released: the next process uses it at once.
        let next = try await vault.get("token", presenting: ["whorl"])
        #expect(next.status == 0)
        #expect(next.released == "value")
    }
}
