import Foundation
import Testing
import TouchgateTestSupport

/// `touchgate audit prune`: six-year retention unless forced, passphrase required, chain kept.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AuditPruneCommandTests {
    @Test func pruneKeepsSixYearsUnlessForcedAndTheChainStillVerifies() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let today = ISO8601DateFormatter.string(from: Date().addingTimeInterval(86_400), timeZone: .gmt,
                                                formatOptions: [.withFullDate])
        let recordsBefore = try await vault.run(["audit", "export"]).stdout.split(separator: "\n").count
        #expect(recordsBefore >= 2)

        let refused = try await vault.withPassphrase(["audit", "prune", "--before", today, "--json"])
        #expect(refused.status == 11, "refused by the retention rule")
        #expect(refused.errorCode == "retention")
        let message = refused.json?["message"] as? String
        #expect(message?.contains("six years") == true, "\(refused.stderrLines)")
        let afterRefusal = try await vault.run(["audit", "export"]).stdout
        #expect(afterRefusal.split(separator: "\n").count > recordsBefore, "nothing removed; the refusal is recorded")
        #expect(!(try await vault.auditTrail()).matching(["event": "audit.prune", "outcome": "denied"]).isEmpty)

        let wrong = try await vault.withPassphrase(["audit", "prune", "--before", today, "--force"], "not it")
        #expect(wrong.status == 8)

        let pruned = try await vault.withPassphrase(["audit", "prune", "--before", today, "--force", "--json"])
        #expect(pruned.status == 0, "\(pruned.stderrLines)")
        #expect((pruned.json?["removed"] as? Int ?? 0) > 0)
        let verify = try await vault.run(["audit", "verify"])
        #expect(verify.status == 0, "\(verify.stderrLines)")

        #expect(try await vault.run(["audit", "prune", "--before", "2019-02-30"]).status == 64)
    }
}
