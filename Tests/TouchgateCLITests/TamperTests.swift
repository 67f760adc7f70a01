import Foundation
import Testing
import TouchgateTestSupport

/// An attacker at the unlocked session with `sqlite3` and `rm`: every edit of the
/// authenticated state, and a wiped audit log, is detected, reported as tampering (exit 6,
/// audited), treated as the most restrictive state, repaired only with the passphrase,
/// and never destroys data.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct TamperTests {
    /// A vault with a finger-guarded secret, locked out after three wrong fingers.
    private func lockedOutVault() async throws -> VaultRig {
        let vault = try VaultRig()
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "t0k", policy: "biometry-any", fresh: true)
        for _ in 1...3 { _ = try await vault.get("token", presenting: ["arch"]) }
        try #require(try await vault.lockout()["locked-out"] as? Bool == true)
        return vault
    }

    /// After an edit: refused as tampering without opening the reader, audited, the status
    /// names the repair, nothing is lost, and `repair` with the passphrase restores use.
    private func expectDetectedAndRepaired(_ vault: VaultRig, _ what: String) async throws {
        let refused = try await vault.get("token", presenting: ["whorl"])
        #expect(refused.status == 6, "\(what): \(refused.stderrLines)")
        #expect(refused.errorCode == "state-tampered", "\(what)")
        #expect(refused.fingerPrompts == 0, "\(what): the reader must not be opened")
        #expect(refused.stdout.contains("t0k") == false)
        #expect((refused.json?["message"] as? String)?.contains("touchgate repair") == true, "\(what)")
        let verify = try await vault.run(["audit", "verify", "--json"])
        #expect(verify.status == 6, "\(what): audit verify must not say intact")
        let status = try await vault.status()
        #expect((status["problem"] as? String)?.contains("touchgate repair") == true, "\(what): \(status)")

        let wrong = try await vault.withPassphrase(["repair", "--json"], "not the passphrase")
        #expect(wrong.status == 8, "\(what): repair needs the passphrase")
        let repaired = try await vault.withPassphrase(["repair", "--json"])
        #expect(repaired.status == 0, "\(what): \(repaired.stderrLines)")
        #expect(try await vault.run(["audit", "verify"]).status == 0, "\(what)")
        let trail = try await vault.auditTrail()
        #expect(!trail.matching(["event": "integrity.failure"]).isEmpty, "\(what): the tampering is on record")
        let released = try await vault.get("token", presenting: ["whorl"])
        #expect(released.status == 0, "\(what): \(released.stderrLines)")
        #expect(released.released == "t0k", "\(what): nothing was lost")
    }

    @Test func resettingALockoutWithSQLIsDetected() async throws {
        let vault = try await lockedOutVault()
        defer { vault.home.remove() }
        _ = try await vault.sql("""
            UPDATE vault_state SET value = CAST(replace(replace(CAST(value AS TEXT), '"consecutiveFailures":3', \
            '"consecutiveFailures":0'), '"lockedUntil"', '"unused"') AS BLOB) WHERE key = 'policy.state'
            """)
        try await expectDetectedAndRepaired(vault, "lockout reset")
    }

    @Test func looseningTheSettingsWithSQLIsDetected() async throws {
        let vault = try await lockedOutVault()
        defer { vault.home.remove() }
        _ = try await vault.sql("""
            INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('policy.settings', \
            CAST('{"lockoutThreshold":20,"lockoutDurationSeconds":1,"sessionTimeoutSeconds":300,"idleTimeoutSeconds":300}' \
            AS BLOB), 0)
            """)
        try await expectDetectedAndRepaired(vault, "settings loosened")
        let policy = try await vault.run(["policy", "show", "--json"])
        #expect(policy.json?["lockout-duration-seconds"] as? Int == 900, "repair keeps the defaults, not the forged values")
    }

    @Test func deletingTheStateOrEditingTheGenerationIsDetected() async throws {
        for (what, statement) in [
            ("state deleted", "DELETE FROM vault_state WHERE key = 'policy.state'"),
            ("generation edited", "UPDATE vault_state SET value = x'0000000000000000' WHERE key = 'enrollment.generation'"),
        ] {
            let vault = try await lockedOutVault()
            defer { vault.home.remove() }
            _ = try await vault.sql(statement)
            try await expectDetectedAndRepaired(vault, what)
        }
    }

    @Test func flippingTheTemplatesSealedMarkerDestroysNothing() async throws {
        let vault = try await lockedOutVault()
        defer { vault.home.remove() }
        _ = try await vault.sql("UPDATE vault_meta SET templates_sealed = 0")
        try await expectDetectedAndRepaired(vault, "templates_sealed flipped")
        // The prints still match after the repair: nothing was sealed twice.
        #expect(try await vault.run(["verify"], presenting: ["whorl"]).status == 0)
    }

    @Test func anOlderGenuineStateSwappedBackIsDetected() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "t0k", policy: "biometry-any", fresh: true)
        _ = try await vault.sql("CREATE TABLE saved_state AS SELECT * FROM vault_state; CREATE TABLE saved_head AS SELECT * FROM auditHead")
        for _ in 1...3 { _ = try await vault.get("token", presenting: ["arch"]) }
        try #require(try await vault.lockout()["locked-out"] as? Bool == true)
        // Both the state rows alone, and the state rows with the audit head of that time.
        _ = try await vault.sql("DELETE FROM vault_state; INSERT INTO vault_state SELECT * FROM saved_state")
        let alone = try await vault.get("token", presenting: ["whorl"])
        #expect(alone.status == 6 && alone.errorCode == "state-tampered", "\(alone.stderrLines)")
        _ = try await vault.sql("DELETE FROM auditHead; INSERT INTO auditHead SELECT * FROM saved_head")
        let together = try await vault.get("token", presenting: ["whorl"])
        #expect(together.status == 6 && together.errorCode == "state-tampered", "\(together.stderrLines)")
        #expect(together.fingerPrompts == 0)
        _ = try await vault.sql("DROP TABLE saved_state; DROP TABLE saved_head")
        try await expectDetectedAndRepaired(vault, "older state swapped back")
    }

    @Test func aWipedAuditLogIsDetectedWithOrWithoutItsKey() async throws {
        for removeKey in [false, true] {
            let vault = try VaultRig()
            defer { vault.home.remove() }
            try await vault.initAndUnlock()
            try await vault.enroll("whorl")
            try await vault.add("token", "t0k", policy: "biometry-any", fresh: true)
            _ = try await vault.sql("DELETE FROM audit; DELETE FROM auditHead")
            if removeKey { try FileManager.default.removeItem(atPath: vault.rig.dataDirectory + "/audit.key") }
            let verify = try await vault.run(["audit", "verify", "--json"])
            #expect(verify.status == 6, "key removed \(removeKey): \(verify.stdout)")
            #expect(verify.json?["records"] == nil, "never 'intact: 0 records'")
            let refused = try await vault.get("token", presenting: ["whorl"])
            #expect(refused.status == 6, "key removed \(removeKey): \(refused.stderrLines)")
            #expect(refused.fingerPrompts == 0)
            #expect((refused.json?["message"] as? String)?.contains("touchgate repair") == true)
            let repaired = try await vault.withPassphrase(["repair", "--json"])
            #expect(repaired.status == 0, "\(repaired.stderrLines)")
            #expect(try await vault.run(["audit", "verify"]).status == 0)
            let trail = try await vault.auditTrail()
            #expect(trail.first?["event"] as? String == "integrity.failure", "the new chain starts by saying the old one is gone")
            #expect(try await vault.get("token", presenting: ["whorl"]).released == "t0k")
        }
    }

    @Test func lockRemovesTheKeyWhateverElseIsDamaged() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        _ = try await vault.sql("INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('policy.settings', x'7b7b7b', 0)")
        let locked = try await vault.run(["lock", "--json"])
        #expect(locked.status == 0, "\(locked.stderrLines)")
        #expect(locked.json?["was-unlocked"] as? Bool == true)
        #expect(locked.stderrLines.joined().contains("touchgate repair"), "the damage is named with its repair")
        #expect(try await vault.status()["locked"] as? Bool == true, "the key is gone")
    }
}
