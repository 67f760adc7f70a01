import Foundation
import Testing
import TouchgateTestSupport
import TouchgateVault

/// `touchgate audit prune`: at least six years kept whatever the date or `--force`, the
/// passphrase required, the chain kept, and what a prune removed shown to a public check.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AuditPruneCommandTests {
    static func day(_ date: Date) -> String { date.formatted(.iso8601.year().month().day()) }

    @Test func aDateInsideTheRetentionIsRefusedWithOrWithoutForce() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let tomorrow = Self.day(Date().addingTimeInterval(86_400))
        let latest = Self.day(AuditLog.retentionCutoff(now: Date()))
        let recordsBefore = try await vault.auditTrail().count
        #expect(recordsBefore >= 2)

        for arguments in [["--before", tomorrow], ["--before", tomorrow, "--force"], ["--before", "2999-01-01", "--force"]] {
            let refused = try await vault.withPassphrase(["audit", "prune", "--json"] + arguments)
            #expect(refused.status == 11, "refused by the retention rule: \(arguments) \(refused.stderrLines)")
            #expect(refused.errorCode == "retention")
            let message = refused.json?["message"] as? String ?? ""
            #expect(message.contains("six years") && message.contains("latest cutoff allowed today is \(latest)")
                    && message.contains("--force does not shorten the retention"), "\(message)")
        }
        let trail = try await vault.auditTrail()
        #expect(trail.first?["seq"] as? Int == 1, "nothing removed")
        #expect(trail.count == recordsBefore + 3, "each refusal is recorded")
        #expect(trail.suffix(3).allSatisfy { $0["event"] as? String == "audit.prune" && $0["outcome"] as? String == "denied" })
        #expect(try await vault.run(["audit", "verify"]).status == 0)

        #expect(try await vault.run(["audit", "prune", "--before", "2019-02-30"]).status == 64)
    }

    @Test func recordsPastTheRetentionGoAndThePublicCheckShowsThePrune() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        // Three records written seven years ago, before the vault existed (the log is made
        // with its own clock set back; the records are MACed and linked as any others).
        let now = Date()
        do {
            let database = try TouchgateDatabase(location: StoreLocation(directory: URL(fileURLWithPath: vault.rig.dataDirectory)))
            let log = try AuditLog(database: database, journal: .disabled, now: { now.addingTimeInterval(-7 * 366 * 86_400) })
            for index in 0..<3 { try log.append(.authAttempt, .failure, reason: "long ago \(index)") }
            try database.closeConnections()
        }
        try await vault.initAndUnlock()
        let kept = try await vault.auditTrail().count - 3

        // A passphrase is needed even past the retention.
        let cutoff = Self.day(AuditLog.retentionCutoff(now: now))
        #expect(try await vault.withPassphrase(["audit", "prune", "--before", cutoff], "not it").status == 8)
        let pruned = try await vault.withPassphrase(["audit", "prune", "--before", cutoff, "--json"])
        #expect(pruned.status == 0, "\(pruned.stderrLines)")
        #expect(pruned.json?["removed"] as? Int == 3, "\(pruned.stdout)")
        #expect(try await vault.run(["audit", "verify"]).status == 0)
        let trail = try await vault.auditTrail()
        #expect(trail.first?["seq"] as? Int == 4)
        #expect(trail.count >= kept + 2, "the failed passphrase and the prune are recorded")
        #expect(trail.last?["event"] as? String == "audit.prune" && trail.last?["outcome"] as? String == "success"
                && (trail.last?["reason"] as? String)?.hasPrefix("removed 3 records up to #3") == true, "\(trail.last ?? [:])")

        // An auditor with the export and the public key sees the prune: when, how many, up to which.
        let export = try await vault.run(["audit", "export"])
        let exportFile = vault.home.path("export.jsonl")
        try export.stdout.write(toFile: exportFile, atomically: true, encoding: .utf8)
        let keyFile = vault.home.path("machine.pub")
        try (try await vault.run(["audit", "public-key"])).stdout.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let checked = try await vault.run(["audit", "verify", "--json", "--public-key", keyFile, "--input", exportFile])
        #expect(checked.status == 0, "\(checked.stdout) \(checked.stderrLines)")
        #expect(checked.json?["first"] as? Int == 4)
        let prunes = checked.json?["prunes"] as? [[String: Any]] ?? []
        #expect(prunes.count == 1 && prunes.first?["removed"] as? Int == 3 && prunes.first?["through"] as? Int == 3,
                "\(checked.stdout)")
        let text = try await vault.run(["audit", "verify", "--public-key", keyFile, "--input", exportFile])
        #expect(text.stdout.contains("records 4…") && text.stdout.contains("3 record(s), up to record 3"), "\(text.stdout)")

        // The beginning cut off an export is told apart from a prune.
        var lines = export.stdout.split(separator: "\n").map(String.init)
        lines.removeFirst()
        try (lines.joined(separator: "\n") + "\n").write(toFile: exportFile, atomically: true, encoding: .utf8)
        let cut = try await vault.run(["audit", "verify", "--json", "--public-key", keyFile, "--input", exportFile])
        #expect(cut.status == 6 && cut.errorCode == "audit-broken", "\(cut.stdout)")
        #expect((cut.json?["message"] as? String)?.contains("records 4…4 were cut from the export") == true, "\(cut.stdout)")
    }
}
