import Foundation
import Testing
import TouchgateTestSupport

/// Wrong passphrases change nothing; the passphrase can be changed; policy limits are enforced.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct PassphraseTests {
    @Test func wrongPassphraseIsExitEightAndChangesNothing() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let created = try await vault.withPassphrase(["init", "--kdf", "minimum"])
        #expect(created.status == 0)
        // A second init is refused and leaves the vault alone.
        #expect(try await vault.withPassphrase(["init", "--kdf", "minimum"], "other").status == 9, "already exists")

        #expect(try await vault.run(["lock"]).status == 0, "init left it unlocked")
        let wrongUnlock = try await vault.withPassphrase(["unlock", "--json"], "not-the-passphrase-42")
        #expect(wrongUnlock.status == 8)
        #expect(wrongUnlock.errorCode == "wrong-passphrase")
        #expect(try await vault.status()["locked"] as? Bool == true)
        #expect(try await vault.run(["secret", "add", "x", "--policy", "passphrase"], stdin: Data("v".utf8)).status == 8)

        let noTerminal = try await vault.runWithoutTerminal(["unlock"], stdin: Data())
        #expect(noTerminal.status == 8)
        #expect(noTerminal.stderrLines.joined().contains("--passphrase-fd"), "says how to give it without a terminal")
        try #require(try await vault.withPassphrase(["unlock"]).status == 0)
        #expect(try await vault.status()["locked"] as? Bool == false)

        let wrongPolicy = try await vault.withPassphrase(["policy", "set", "--lockout-threshold", "5"], "not-the-passphrase-42")
        #expect(wrongPolicy.status == 8)
        let policy = try await vault.run(["policy", "show", "--json"])
        #expect(policy.json?["lockout-threshold"] as? Int == 3)
        #expect(try await vault.withPassphrase(["policy", "set", "--session-timeout", "301"]).status == 64, "above 5 minutes")
        #expect(try await vault.withPassphrase(["policy", "set", "--lockout-threshold", "21"]).status == 64)
        #expect(try await vault.run(["policy", "show", "--json"]).json?["session-timeout-seconds"] as? Int == 300)

        let wrongChange = try await vault.run(["passphrase", "change", "--passphrase-fd", "0"],
                                              stdin: VaultRig.lines("not-the-passphrase-42", "a new long passphrase"))
        #expect(wrongChange.status == 8)
        #expect(try await vault.withPassphrase(["unlock"], "a new long passphrase").status == 8, "the new one was not set")
        #expect(try await vault.withPassphrase(["unlock"]).status == 0, "the old one still works")

        // libpwquality refuses the weakest passphrases: they are all that protects the data at rest.
        for weak in ["a", "password", "abcdefgh"] {
            let refused = try await vault.run(["passphrase", "change", "--passphrase-fd", "0", "--json"],
                                              stdin: VaultRig.lines(VaultRig.passphrase, weak))
            #expect(refused.status == 11, "\(weak): \(refused.stderrLines)")
            #expect(refused.errorCode == "weak-passphrase")
        }
        #expect(try await vault.withPassphrase(["unlock"]).status == 0, "nothing changed")
        let changed = try await vault.run(["passphrase", "change", "--passphrase-fd", "0", "--kdf", "minimum"],
                                          stdin: VaultRig.lines(VaultRig.passphrase, "a new long passphrase"))
        #expect(changed.status == 0, "\(changed.stderrLines)")
        #expect(try await vault.withPassphrase(["unlock"]).status == 8)
        #expect(try await vault.withPassphrase(["unlock"], "a new long passphrase").status == 0)

        let trail = try await vault.run(["audit", "export"]).stdout
        let records = try await vault.auditTrail()
        #expect(!records.matching(["event": "passphrase.change"]).isEmpty)
        #expect(!records.matching(["event": "policy.change", "item": nil, "outcome": "denied"]).isEmpty)
        for secret in [VaultRig.passphrase, "a new long passphrase", "not-the-passphrase-42"] {
            #expect(!trail.contains(secret), "no passphrase in the trail")
        }
        #expect(try await vault.run(["audit", "verify"]).status == 0)
    }
}
