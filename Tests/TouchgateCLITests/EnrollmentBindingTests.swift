import Foundation
import Testing
import TouchgateTestSupport

/// Enrollment changes once a vault exists: they need the passphrase and the unlocked
/// vault, they destroy biometry-current-set items and spare the others; templates are
/// sealed, and prints enrolled before the vault are migrated into it.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct EnrollmentBindingTests {
    @Test func currentSetItemDiesWhenAFingerIsEnrolledWhileBiometryAnyRemains() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("bound", "only-this-set", policy: "biometry-current-set")
        try await vault.add("any", "any-finger", policy: "biometry-any")
        try await vault.add("either", "finger-or-passphrase", policy: "biometry-current-set|passphrase")

        // Without a terminal to confirm on and without --yes, nothing happens, and the
        // secrets that would be destroyed are named.
        let declined = try await vault.runWithoutTerminal(["enroll", "--json", "--finger", "left-thumb", "--passphrase-fd", "0"],
                                                          stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(declined.status == 11, "\(declined.stderrLines)")
        #expect(declined.errorCode == "declined")
        let named = declined.json?["message"] as? String ?? ""
        #expect(named.contains("bound") && named.contains("either") && !named.contains("any,"), "\(named)")
        #expect((try await vault.run(["prints", "list", "--json"]).json?["prints"] as? [Any])?.count == 1)

        let enrolled = try await vault.withPassphrase(["enroll", "--json", "--yes", "--finger", "left-thumb"],
                                                      presenting: ["arch"])
        #expect(enrolled.status == 0, "\(enrolled.stderrLines)")
        #expect(Set(enrolled.json?["invalidated"] as? [String] ?? []) == ["bound", "either"], "says which were destroyed")

        let gone = try await vault.get("bound", presenting: ["whorl"])
        #expect(gone.status == 8)
        #expect(gone.errorCode == "item-invalidated")
        #expect(gone.fingerPrompts == 0)
        // Even a passphrase branch cannot bring a current-set item back.
        let alsoGone = try await vault.run(["secret", "get", "either", "--passphrase-fd", "0"],
                                           stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(alsoGone.status == 8)
        let kept = try await vault.get("any", presenting: ["arch"])
        #expect(kept.status == 0, "\(kept.stderrLines)")
        #expect(kept.released == "any-finger")

        let list = try await vault.run(["secret", "list", "--json"])
        let items = try #require(list.json?["items"] as? [[String: Any]])
        let invalidated = Set(items.filter { $0["invalidated"] as? Bool == true }.compactMap { $0["name"] as? String })
        #expect(invalidated == ["bound", "either"])
        #expect(items.count == 3)
        for value in ["only-this-set", "any-finger", "finger-or-passphrase"] {
            #expect(!list.stdout.contains(value), "secret list never shows values")
        }
        // For people, a table: a header and one aligned row per item, invalidated ones saying so.
        let text = try await vault.run(["secret", "list"])
        let rows = text.stdout.split(separator: "\n").map(String.init)
        #expect(rows.count == 4 && rows[0].hasPrefix("NAME ") && rows[0].contains("POLICY") && rows[0].hasSuffix("NOTES"),
                "\(text.stdout)")
        let policyColumn = rows[0].range(of: "POLICY").map { rows[0].distance(from: rows[0].startIndex, to: $0.lowerBound) }
        for row in rows.dropFirst() {
            let policy = row.dropFirst(policyColumn ?? 0)
            #expect(policy.hasPrefix("biometry-"), "the policy column is aligned: \(text.stdout)")
        }
        #expect(rows.contains { $0.hasPrefix("bound ") && $0.contains("biometry-current-set")
                                && $0.hasSuffix("invalidated: fingers changed; store it again") }, "\(text.stdout)")
        // The wrapped keys are gone from the file, not just flagged.
        #expect(try await vault.sql("SELECT count(*) FROM vault_item WHERE wrapped_key IS NULL") == "2")
        let trail = try await vault.run(["audit", "export"]).stdout
        #expect(trail.components(separatedBy: "key destroyed").count - 1 == 2)
        #expect(!(try await vault.auditTrail()).matching(["event": "finger.enroll"]).isEmpty)

        // Deleting a finger changes the set too: a new current-set item dies with it.
        try await vault.add("bound2", "second", policy: "biometry-current-set")
        let deleted = try await vault.withPassphrase(["prints", "delete", "--finger", "left-thumb", "--yes"])
        #expect(deleted.status == 0, "\(deleted.stderrLines)")
        #expect(try await vault.get("bound2", presenting: ["whorl"]).status == 8)
        #expect(try await vault.get("any", presenting: ["whorl"]).status == 0)
    }

    @Test func enrollingNeedsThePassphraseAndTheUnlockedVault() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let wrong = try await vault.withPassphrase(["enroll", "--json"], "not it", presenting: ["whorl"])
        #expect(wrong.status == 8)
        #expect(wrong.errorCode == "wrong-passphrase")
        #expect(wrong.fingerPrompts == 0, "refused before the reader")
        let none = try await vault.runWithoutTerminal(["enroll", "--json"], stdin: Data())
        #expect(none.status == 8, "no terminal and no --passphrase-fd: \(none.stderrLines)")
        #expect(try await vault.run(["prints", "list", "--json"]).stdout.contains("right-index") == false)

        #expect(try await vault.run(["lock"]).status == 0)
        let locked = try await vault.withPassphrase(["enroll", "--json"], presenting: ["whorl"])
        #expect(locked.status == 8)
        #expect(locked.errorCode == "vault-locked")
        #expect(locked.json?["message"] as? String == "vault locked: run touchgate unlock")
        let verify = try await vault.run(["verify", "--json"], presenting: ["whorl"])
        #expect(verify.status == 8)
        #expect(verify.errorCode == "vault-locked")
        #expect(!(try await vault.auditTrail()).matching(["event": "finger.enroll", "outcome": "failure"]).isEmpty)
    }

    @Test func printsEnrolledBeforeTheVaultAreSealedIntoIt() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        // No vault yet: the reader layer stores the template in the clear, no passphrase needed.
        try await vault.rig.enroll("whorl")
        #expect(try await vault.sql("SELECT substr(template, 1, 3) FROM print") == "FP3")
        try await vault.initAndUnlock()
        #expect(try await vault.sql("SELECT hex(substr(template, 1, 1)) FROM print") == "01", "sealed (version byte)")
        #expect(try await vault.sql("SELECT count(*) FROM print WHERE instr(template, 'FP3') = 1") == "0")
        let match = try await vault.run(["verify", "--json"], presenting: ["whorl"])
        #expect(match.status == 0, "\(match.stderrLines)")
        #expect(try await vault.run(["verify", "--json"], presenting: ["arch"]).status == 1)
        // Data files stay private, the audit key included.
        for file in try FileManager.default.contentsOfDirectory(atPath: vault.rig.dataDirectory) {
            let mode = try FileManager.default.attributesOfItem(atPath: vault.rig.dataDirectory + "/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }
    }
}
