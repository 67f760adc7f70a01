import Foundation
import Testing
import TouchgateTestSupport

/// kill -9 at random moments of the commands that change state: afterwards the audit
/// chain verifies, every change that took effect has its record, no record claims a
/// change that did not happen, and nothing is lost.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct CrashConsistencyTests {
    /// How long `body` takes, in seconds, as the upper end of the kill window.
    private func duration(_ body: () async throws -> Void) async rethrows -> Double {
        let start = Date()
        try await body()
        return Date().timeIntervalSince(start)
    }

    private func records(_ vault: VaultRig) async throws -> [[String: Any]] {
        try await vault.auditTrail()
    }

    private func successes(_ records: [[String: Any]], _ event: String) -> [[String: Any]] {
        records.matching(["event": event, "outcome": "success"])
    }

    @Test func secretAddKilledAnywhereLeavesNoGapAndNoFalseRecord() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let window = try await duration { try await vault.add("warm-up", "v", policy: "passphrase") } * 1.3
        for trial in 0..<25 {
            let name = "k\(trial)"
            let delay = Double.random(in: 0...window)
            _ = try await vault.rig.process.run(["secret", "add", name, "--policy", "passphrase"],
                                                stdin: Data("value-\(trial)".utf8), killAfter: delay)
            #expect(try await vault.run(["audit", "verify"]).status == 0, "trial \(trial), killed after \(delay) s")
            let items = try #require(try await vault.run(["secret", "list", "--json"]).json?["items"] as? [[String: Any]])
            let exists = items.contains { $0["name"] as? String == name }
            let recorded = successes(try await records(vault), "item.write").contains { $0["item"] as? String == name }
            #expect(exists == recorded, "trial \(trial), killed after \(delay) s: item \(exists), record \(recorded)")
        }
    }

    @Test func passphraseChangeKilledAnywhereIsNeverUnrecorded() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        var current = VaultRig.passphrase
        let window = try await duration {
            let changed = try await vault.run(["passphrase", "change", "--kdf", "minimum", "--passphrase-fd", "0"],
                                              stdin: VaultRig.lines(current, "warm-up passphrase"))
            try #require(changed.status == 0, "\(changed.stderrLines)")
            current = "warm-up passphrase"
        } * 1.3
        for trial in 0..<20 {
            let next = "passphrase number \(trial)"
            let before = successes(try await records(vault), "passphrase.change").count
            let delay = Double.random(in: 0...window)
            _ = try await vault.rig.process.run(["passphrase", "change", "--kdf", "minimum", "--passphrase-fd", "0"],
                                                stdin: VaultRig.lines(current, next), killAfter: delay)
            let changed = try await vault.withPassphrase(["unlock"], next).status == 0
            if changed {
                current = next
            } else {
                #expect(try await vault.withPassphrase(["unlock"], current).status == 0, "trial \(trial): no passphrase works")
            }
            let after = successes(try await records(vault), "passphrase.change").count
            #expect(after - before == (changed ? 1 : 0), "trial \(trial), killed after \(delay) s: changed \(changed)")
            #expect(try await vault.run(["audit", "verify"]).status == 0, "trial \(trial)")
        }
    }

    @Test func enrollKilledAnywhereIsAllOrNothing() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let window = try await duration { try await vault.enroll("whorl") } * 1.3
        let fingers = ["left-thumb", "left-index", "left-middle", "left-ring", "left-little",
                       "right-thumb", "right-middle", "right-ring", "right-little"]
        for (trial, finger) in fingers.enumerated() {
            // A secret bound to the enrolled set: an enrollment must destroy its key with the change.
            let bound = try await vault.run(["secret", "add", "bound", "--policy", "biometry-current-set", "--replace", "--json"],
                                            presenting: ["whorl"], stdin: Data("b\(trial)".utf8))
            try #require(bound.status == 0, "\(bound.stderrLines)")
            let delay = Double.random(in: 0...window)
            vault.finger.present(["arch"])
            let finger0 = vault.finger
            _ = try await vault.rig.process.run(["enroll", "--json", "--finger", finger, "--yes", "--passphrase-fd", "0"],
                                                stdin: VaultRig.lines(VaultRig.passphrase), killAfter: delay) { line, _ in
                finger0.handle(line)
            }
            #expect(try await vault.run(["audit", "verify"]).status == 0, "trial \(trial), killed after \(delay) s")
            let prints = try #require(try await vault.run(["prints", "list", "--json"]).json?["prints"] as? [[String: Any]])
            let enrolled = prints.contains { $0["finger"] as? String == finger }
            let recorded = successes(try await records(vault), "finger.enroll")
                .contains { ($0["reason"] as? String)?.contains(":\(finger)@") == true }
            #expect(enrolled == recorded, "trial \(trial), killed after \(delay) s: print \(enrolled), record \(recorded)")
            let liveKeys = try await vault.sql("SELECT count(*) FROM vault_item WHERE name = 'bound' AND wrapped_key IS NOT NULL")
            #expect(liveKeys == (enrolled ? "0" : "1"), "trial \(trial): the bound key must go exactly with the change")
        }
    }
}
