import Foundation
import Testing
import TouchgateTestSupport

/// `verify` and `identify` are authentication attempts like any other: counted, audited,
/// refused during a lockout without opening the reader, and never a way around the
/// lockout that guards secrets.
@Suite(.serialized) struct DecisionPathTests {
    @Test func wrongFingersAtVerifyAndIdentifyLockOutEverything() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "t0k", policy: "biometry-any")

        let first = try await vault.run(["verify", "--json"], presenting: ["arch"])
        #expect(first.status == 1)
        #expect(first.json?["attempts-left"] as? Int == 2)
        #expect(try await vault.run(["identify", "--json"], presenting: ["loop-right"]).status == 1)
        let third = try await vault.run(["verify", "--json"], presenting: ["tented_arch"])
        #expect(third.status == 7, "the third failure starts the lockout: \(third.stderrLines)")
        #expect(third.errorCode == "locked-out")
        #expect(third.json?["retry-after-seconds"] as? Int ?? 0 > 0)

        // During the lockout nothing reaches the reader: not verify, not identify, not a release.
        for arguments in [["verify", "--json"], ["identify", "--json"], ["secret", "get", "token", "--json"]] {
            let refused = try await vault.run(arguments, presenting: ["whorl"])
            #expect(refused.status == 7, "\(arguments): \(refused.stderrLines)")
            #expect(refused.fingerPrompts == 0, "\(arguments) must not open the reader")
            #expect(!refused.eventNames.contains("touch-needed"))
            #expect(refused.stdout.contains("t0k") == false)
        }
        let lockout = try await vault.lockout()
        #expect(lockout["locked-out"] as? Bool == true)
        #expect(lockout["consecutive-failures"] as? Int == 3)

        // Every attempt is one audit record, the refusals too; the chain verifies.
        let records = try #require(try await vault.run(["audit", "show", "--json"]).json?["records"] as? [[String: Any]])
        let attempts = records.filter { $0["event"] as? String == "auth.attempt" }
        #expect(attempts.filter { $0["outcome"] as? String == "failure" }.count == 3)
        #expect(attempts.filter { $0["outcome"] as? String == "denied" }.count == 2, "verify and identify refused")
        #expect(records.contains { $0["event"] as? String == "item.read" && $0["outcome"] as? String == "denied" })
        #expect(records.contains { $0["event"] as? String == "lockout.start" })
        #expect(try await vault.run(["audit", "verify"]).status == 0)
    }

    @Test func aMatchAtVerifyIsAuditedButStartsNoSession() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "t0k", policy: "biometry-any")
        #expect(try await vault.run(["lock"]).status == 0)
        #expect(try await vault.withPassphrase(["unlock"]).status == 0)

        let match = try await vault.run(["verify", "--json"], presenting: ["whorl"])
        #expect(match.status == 0)
        #expect(match.json?["match"] as? Bool == true)
        let records = try #require(try await vault.run(["audit", "show", "--json"]).json?["records"] as? [[String: Any]])
        let last = try #require(records.last { $0["event"] as? String == "auth.attempt" })
        #expect(last["outcome"] as? String == "success")
        #expect((last["reason"] as? String)?.contains("whorl") == false, "records name prints, never templates")

        // The release still needs its own touch: a verify is not a reusable proof.
        let release = try await vault.get("token", presenting: ["whorl"])
        #expect(release.status == 0)
        #expect(release.fingerPrompts == 1)
    }

    @Test func oneScanBudgetForEveryOperation() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "t0k", policy: "biometry-any")
        // Each prompt is answered with a retry instead of an image; both give up after 5 scans.
        for arguments in [["verify", "--json"], ["secret", "get", "token", "--json"]] {
            vault.finger.present([])  // a new connection: the driver listens anew for every process
            let result = try await vault.rig.process.run(arguments) { line, _ in
                if VirtualImageFinger.isPrompt(line) { try? vault.finger.retry() }
            }
            #expect(result.status == 5, "\(arguments): \(result.stderrLines)")
            #expect(result.fingerPrompts == 5, "\(arguments): 5 scans, not \(result.fingerPrompts)")
        }
        let lockout = try await vault.lockout()
        #expect(lockout["consecutive-failures"] as? Int == 0, "poor scans are not counted")
    }
}
