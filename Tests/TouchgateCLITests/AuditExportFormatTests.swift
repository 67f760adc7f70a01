import Foundation
import Testing
import TouchgateTestSupport

/// What leaves the machine: an export an auditor checks with the public key alone, edits
/// to it that the check finds, and the OCSF and ECS forms a SIEM reads.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct AuditExportFormatTests {
    /// A vault with a few records of each outcome; returns it with its export and public key file.
    func exported() async throws -> (VaultRig, export: String, keyFile: String) {
        let vault = try VaultRig()
        try await vault.initAndUnlock()
        try await vault.add("api", "token", policy: "passphrase")
        // A refused prune: a record with outcome `denied`.
        let refused = try await vault.withPassphrase(["audit", "prune", "--before", AuditShowTests.day(Date())])
        try #require(refused.status == 11, "the refused prune: \(refused.stderrLines)")
        let export = try await vault.run(["audit", "export"])
        try #require(export.status == 0, "\(export.stderrLines)")
        let key = try await vault.run(["audit", "public-key"])
        try #require(key.status == 0, "\(key.stderrLines)")
        let keyFile = vault.home.path("machine.pub")
        try key.stdout.write(toFile: keyFile, atomically: true, encoding: .utf8)
        return (vault, export.stdout, keyFile)
    }

    /// `audit verify --public-key` over `export` (a file in `vault`'s home); what it said.
    func check(_ vault: VaultRig, _ export: String, keyFile: String) async throws -> CLIResult {
        let file = vault.home.path("export-\(UUID().uuidString.prefix(6)).jsonl")
        try export.write(toFile: file, atomically: true, encoding: .utf8)
        return try await vault.run(["audit", "verify", "--json", "--public-key", keyFile, "--input", file])
    }

    @Test("an export verifies with the public key alone; every edit an auditor must catch is caught (exit 6)")
    func publicVerification() async throws {
        let (vault, export, keyFile) = try await exported()
        defer { vault.home.remove() }
        let records = try VaultRig.exportedRecords(try await vault.run(["audit", "export"]))
        let intact = try await check(vault, export, keyFile: keyFile)
        #expect(intact.status == 0, "\(intact.stdout) \(intact.stderrLines)")
        #expect(intact.json?["records"] as? Int == records.count, "\(intact.stdout)")
        // Standard input works too, and needs no vault at all: a fresh home with only the files.
        let auditor = try CLIRig()
        defer { auditor.home.remove() }
        let fromStdin = try await auditor.run(["audit", "verify", "--public-key", keyFile], stdin: Data(export.utf8))
        #expect(fromStdin.status == 0, "\(fromStdin.stderrLines)")
        // A key "file" that never ends, or that is not a key, is refused at once (exit 64).
        for hostile in ["/dev/zero", "/etc/passwd", auditor.home.path("no-such-file")] {
            let refused = try await auditor.run(["audit", "verify", "--public-key", hostile], stdin: Data(export.utf8))
            #expect(refused.status == 64 && refused.stderrLines.joined().contains("public key"),
                    "\(hostile): \(refused.status) \(refused.stderrLines)")
        }
        // An "export" with no newline and no end is refused, not read into memory.
        let endless = try await auditor.run(["audit", "verify", "--public-key", keyFile, "--input", "/dev/zero"])
        #expect(endless.status == 64 && endless.stderrLines.joined().contains("is not an export"), "\(endless.stderrLines)")
        #expect(fromStdin.stdout.contains("export intact: \(records.count) records"), "\(fromStdin.stdout)")

        var lines = export.split(separator: "\n").map(String.init)
        let edits: [(String, [String], String)] = [
            ("an outcome changed", lines.map { $0.replacingOccurrences(of: "\"outcome\":\"denied\"", with: "\"outcome\":\"success\"") },
             "was altered"),
            ("a record removed", Array(lines[0..<2] + lines[3...]), "is missing"),
            ("the beginning cut", Array(lines[1...]), "cut from the export"),
            ("the tail cut", Array(lines[0..<(lines.count - 2)] + [lines.last!]), "the tail was removed"),
            ("two records swapped", [lines[1], lines[0]] + lines[2...], "comes after"),
            ("the seal dropped", Array(lines.dropLast()), "no seal"),
            ("a record appended after the seal", lines + [lines[0]], "follows the seal"),
        ]
        for (what, edited, reason) in edits {
            let result = try await check(vault, edited.joined(separator: "\n") + "\n", keyFile: keyFile)
            #expect(result.status == 6, "\(what): \(result.stdout)")
            #expect(result.errorCode == "audit-broken", "\(what): \(result.stdout)")
            #expect((result.json?["message"] as? String)?.contains(reason) == true, "\(what): \(result.stdout)")
        }
        // A seal signed by someone else: re-signing needs the machine's key.
        let otherKey = vault.home.path("other.pub")
        try String(repeating: "ab", count: 32).write(toFile: otherKey, atomically: true, encoding: .utf8)
        let forged = try await check(vault, export, keyFile: otherKey)
        #expect(forged.status == 6 && (forged.json?["message"] as? String)?.contains("not signed by the registered") == true,
                "\(forged.stdout)")
        // Bad input is a usage error that says what is wrong.
        try "not a key".write(toFile: otherKey, atomically: true, encoding: .utf8)
        let badKey = try await check(vault, export, keyFile: otherKey)
        #expect(badKey.status == 64 && (badKey.json?["message"] as? String)?.contains("64 hex digits") == true, "\(badKey.stdout)")
        lines[1] = "{\"garbage\": true}"
        let garbage = try await check(vault, lines.joined(separator: "\n"), keyFile: keyFile)
        #expect(garbage.status == 64 && (garbage.json?["message"] as? String)?.contains("line 2") == true, "\(garbage.stdout)")
        // The local trail is untouched by all this.
        #expect(try await vault.run(["audit", "verify"]).status == 0)
    }

    @Test("--format ocsf writes OCSF Authentication events; --format ecs ECS documents; same records, no seal")
    func interchangeFormats() async throws {
        let (vault, _, _) = try await exported()
        defer { vault.home.remove() }
        let records = try VaultRig.exportedRecords(try await vault.run(["audit", "export"]))
        func objects(_ format: String) async throws -> [[String: Any]] {
            let result = try await vault.run(["audit", "export", "--format", format])
            try #require(result.status == 0, "\(format): \(result.stderrLines)")
            return try result.stdout.split(separator: "\n").map {
                try #require((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])
            }
        }
        let ocsf = try await objects("ocsf")
        #expect(ocsf.count == records.count)
        for (event, record) in zip(ocsf, records) {
            #expect(event["class_uid"] as? Int == 3002 && event["category_uid"] as? Int == 3)
            let activity = try #require(event["activity_id"] as? Int)
            #expect(event["type_uid"] as? Int == 300_200 + activity)
            let metadata = try #require(event["metadata"] as? [String: Any])
            #expect(metadata["sequence"] as? Int == record["seq"] as? Int)
            #expect(metadata["version"] as? String == "1.1.0")
            let status = event["status_id"] as? Int
            switch record["outcome"] as? String {
            case "success": #expect(status == 1)
            case "failure", "denied": #expect(status == 2, "\(event)")
            default: #expect(status == 99)
            }
            #expect(event["time"] as? Int == Int(((record["unix-time"] as? Double ?? 0) * 1000).rounded(.down)))
            let unmapped = try #require(event["unmapped"] as? [String: Any])
            #expect(unmapped["chain"] as? String == record["chain"] as? String)
        }
        #expect(ocsf.contains { ($0["status_id"] as? Int) == 2 }, "the refused prune shows as a failure")

        let ecs = try await objects("ecs")
        #expect(ecs.count == records.count)
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for (document, record) in zip(ecs, records) {
            let timestamp = try #require(document["@timestamp"] as? String)
            let date = try #require(iso.date(from: timestamp), "\(timestamp)")
            #expect(abs(date.timeIntervalSince1970 - (record["unix-time"] as? Double ?? 0)) < 0.002)
            let event = try #require(document["event"] as? [String: Any])
            #expect(event["action"] as? String == record["event"] as? String)
            #expect(["success", "failure", "unknown"].contains(event["outcome"] as? String ?? ""))
            #expect(event["sequence"] as? Int == record["seq"] as? Int)
            #expect((event["category"] as? [String])?.isEmpty == false)
            #expect((document["ecs"] as? [String: Any])?["version"] as? String == "8.11.0")
        }
        let bad = try await vault.run(["audit", "export", "--format", "xml"])
        #expect(bad.status == 64, "\(bad.stderrLines)")
    }

    @Test("through touchgated: the public key and a sealed export come from the daemon, and verify")
    func throughTheDaemon() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let key = try await rig.run(["audit", "public-key", "--json"])
        #expect(key.status == 0, "\(key.stderrLines)\n\(rig.daemonLog)")
        let hex = try #require(key.json?["public-key"] as? String)
        #expect(hex.count == 64)
        let export = try await rig.run(["audit", "export"])
        #expect(export.status == 0, "\(export.stderrLines)")
        let keyFile = rig.home.path("daemon.pub")
        try hex.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let checked = try await rig.run(["audit", "verify", "--public-key", keyFile], stdin: Data(export.stdout.utf8))
        #expect(checked.status == 0, "\(checked.stdout) \(checked.stderrLines)")
        let ecs = try await rig.run(["audit", "export", "--format", "ecs"])
        #expect(ecs.status == 0 && ecs.stdout.contains("\"dataset\":\"touchgate.audit\""), "\(ecs.stderrLines)")
    }
}
