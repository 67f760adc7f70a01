import Foundation
import Testing
import TouchgateTestSupport

/// The whole path of issue 3 through the built binary on virtual_image with the NIST
/// prints: init, unlock, enroll, store, release, lockout, audit chain, tampering.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct SecretFlowTests {
    @Test func releaseThenLockoutWithoutAskingThenAuditDetectsTampering() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("github-token", "ghp_s3cret-value", policy: "biometry-current-set")

        // The enrolled finger releases exactly the value, after exactly one prompt.
        let released = try await vault.get("github-token", presenting: ["whorl"])
        #expect(released.status == 0, "\(released.stderrLines)")
        #expect(released.released == "ghp_s3cret-value")
        #expect(released.fingerPrompts == 1)
        // Inside the reuse window no finger is asked for.
        let reused = try await vault.get("github-token")
        #expect(reused.status == 0)
        #expect(reused.released == "ghp_s3cret-value")
        #expect(reused.fingerPrompts == 0)

        // End the reuse session (lock wipes the key; unlock starts a passphrase-only session).
        #expect(try await vault.run(["lock"]).status == 0)
        #expect(try await vault.get("github-token").status == 8, "locked vault: exit 8")
        #expect(try await vault.withPassphrase(["unlock"]).status == 0)

        // Wrong fingers: two plain failures, the third starts the lockout (exit 7).
        for expected: Int32 in [1, 1, 7] {
            let wrong = try await vault.get("github-token", presenting: ["arch"])
            #expect(wrong.status == expected, "\(wrong.stderrLines)")
            #expect(wrong.fingerPrompts == 1, "each failed attempt asked for one finger")
            #expect(wrong.stdout.contains("ghp_") == false)
        }
        // The fourth, and the next from yet another process, are refused before any reader use.
        for _ in 0..<2 {
            let refused = try await vault.get("github-token", presenting: ["whorl"])
            #expect(refused.status == 7)
            #expect(refused.errorCode == "locked-out")
            #expect(refused.fingerPrompts == 0, "no finger asked for during lockout")
            #expect(!refused.eventNames.contains("touch-needed"), "the reader was not even opened")
            #expect(vault.finger.prompts == 0)
            let message = try #require(refused.json?["message"] as? String)
            #expect(message.contains(" min"), "says how long: \(message)")
        }
        let lockout = try await vault.lockout()
        #expect(lockout["locked-out"] as? Bool == true)
        #expect(lockout["consecutive-failures"] as? Int == 3)
        let remaining = try #require(lockout["remaining-seconds"] as? Int)
        #expect(remaining > 800)

        // The trail holds every decision and verifies.
        let verified = try await vault.run(["audit", "verify", "--json"])
        #expect(verified.status == 0, "\(verified.stderrLines)")
        let shown = try await vault.run(["audit", "show", "--json"])
        let records = try #require(shown.json?["records"] as? [[String: Any]])
        let events = records.compactMap { $0["event"] as? String }
        #expect(events.filter { $0 == "lockout.start" }.count == 1)
        #expect(events.contains("vault.init") && events.contains("vault.unlock") && events.contains("vault.lock"))
        #expect(events.contains("finger.enroll") && events.contains("item.write"))
        #expect(!events.contains("policy.change"), "creating an item is item.write, not a policy change")
        let reads = records.filter { $0["event"] as? String == "item.read" }
        #expect(reads.filter { $0["outcome"] as? String == "success" }.count == 2)
        // Denied: with the vault locked, the failure that started the lockout, the two refusals.
        #expect(reads.filter { $0["outcome"] as? String == "denied" }.count == 4)
        #expect(reads.filter { $0["outcome"] as? String == "failure" }.count == 2)
        let biometricFailures = records.filter {
            $0["event"] as? String == "auth.attempt" && $0["outcome"] as? String == "failure"
                && ($0["reason"] as? String ?? "").hasPrefix("biometry")
        }
        #expect(biometricFailures.count == 3)
        let export = try await vault.run(["audit", "export"])
        #expect(try VaultRig.exportedRecords(export).count == records.count)
        #expect(!shown.stdout.contains("ghp_") && !export.stdout.contains("ghp_"), "never a value in the trail")

        // Edit one record with plain SQL: verify fails and names it.
        let target = try #require(records.first { $0["event"] as? String == "lockout.start" }?["seq"] as? Int)
        _ = try await vault.sql("UPDATE audit SET outcome = 'failure' WHERE seq = \(target)")
        let broken = try await vault.run(["audit", "verify"])
        #expect(broken.status == 6)
        #expect(broken.stderrLines.joined().contains("record \(target)"), "\(broken.stderrLines)")
    }

    @Test func lockoutExpiresAfterTheConfiguredDuration() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let set = try await vault.withPassphrase(["policy", "set", "--lockout-threshold", "2", "--lockout-duration", "8", "--json"])
        #expect(set.status == 0, "\(set.stderrLines)")
        #expect(set.json?["lockout-duration-seconds"] as? Int == 8)
        try await vault.enroll("whorl")
        try await vault.add("db-password", "hunter2", policy: "biometry-any", fresh: true)

        #expect(try await vault.get("db-password", presenting: ["arch"]).status == 1)
        #expect(try await vault.get("db-password", presenting: ["arch"]).status == 7)
        let refused = try await vault.get("db-password", presenting: ["whorl"])
        #expect(refused.status == 7)
        #expect(refused.fingerPrompts == 0)
        // 8 s leaves room for the refused attempts on a loaded machine; wait it out.
        try await Task.sleep(for: .seconds(9))
        let lockout = try await vault.lockout()
        #expect(lockout["locked-out"] as? Bool == false)
        #expect(lockout["consecutive-failures"] as? Int == 0)
        let released = try await vault.get("db-password", presenting: ["whorl"])
        #expect(released.status == 0, "\(released.stderrLines)")
        #expect(released.released == "hunter2")
        // A fresh-touch item asks every time, even inside the reuse window.
        let again = try await vault.get("db-password", presenting: ["whorl"])
        #expect(again.status == 0)
        #expect(again.fingerPrompts == 1)
        let trail = try await vault.run(["audit", "export"]).stdout
        #expect(!(try await vault.auditTrail()).matching(["event": "lockout.end"]).isEmpty)
        #expect(trail.contains("lockout-duration 900 -> 8"))
    }

    @Test func twentyFailuresLeaveOnlyThePassphrase() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try #require(try await vault.withPassphrase(["policy", "set", "--lockout-threshold", "20"]).status == 0)
        try await vault.enroll("whorl")
        try await vault.add("token", "t0k", policy: "biometry-any", fresh: true)
        for attempt in 1...20 {
            let wrong = try await vault.get("token", presenting: ["arch"])
            #expect(wrong.status == (attempt < 20 ? 1 : 7), "attempt \(attempt): \(wrong.stderrLines)")
        }
        let lockout = try await vault.lockout()
        #expect(lockout["passphrase-only"] as? Bool == true)
        #expect(lockout["remaining-seconds"] is NSNull, "no timer: only the passphrase lifts it")
        let refused = try await vault.get("token", presenting: ["whorl"])
        #expect(refused.status == 7)
        #expect(refused.fingerPrompts == 0)
        let message = try #require(refused.json?["message"] as? String)
        #expect(message.contains("passphrase"))

        #expect(try await vault.withPassphrase(["unlock"]).status == 0)
        #expect(try await vault.lockout()["locked-out"] as? Bool == false)
        let released = try await vault.get("token", presenting: ["whorl"])
        #expect(released.status == 0)
        #expect(released.released == "t0k")
    }
}
