import Foundation
import Testing
import TouchgateTestSupport

/// `touchgate tpm` end to end, in the personal mode, against swtpm on a Unix socket.
@Suite("touchgate tpm", .serialized)
struct TPMCommandTests {
    @Test("enroll, status, unlock through the TPM; a restored older copy refused (exit 6) until repair; ten wrong passphrases are exit 7 until tpm recover")
    func personalMode() async throws {
        let tpm = try SwtpmRig()
        var vault = try VaultRig()
        vault.rig.process.environment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        try await vault.initAndUnlock()

        let before = try await vault.run(["tpm", "status", "--json"])
        #expect(before.status == 0 && before.json?["bound"] as? Bool == false, "\(before.stdout) \(before.stderrLines)")
        let enrolled = try await vault.withPassphrase(["tpm", "enroll", "--json"])
        #expect(enrolled.status == 0, "\(enrolled.stdout) \(enrolled.stderrLines)")
        let recovery = try #require(enrolled.json?["recovery-key"] as? String)
        #expect(recovery.count == 71 && recovery.split(separator: "-").count == 8, "\(recovery)")
        let status = try await vault.run(["tpm", "status"])
        #expect(status.status == 0 && status.stdout.contains("guards the vault key") && status.stdout.contains("(in step)"),
                "\(status.stdout)")
        let overall = try await vault.run(["status", "--json"])
        #expect((overall.json?["tpm"] as? String)?.contains("guards the vault key; rollback counter") == true, "\(overall.stdout)")
        let again = try await vault.withPassphrase(["tpm", "enroll"])
        #expect(again.status == 64 && again.stderrLines.joined().contains("already bound"), "\(again.stderrLines)")

        #expect(try await vault.run(["lock"]).status == 0)
        #expect(try await vault.withPassphrase(["unlock"]).status == 0)
        try await vault.add("kept", "k", policy: "passphrase")
        try await vault.add("gone", "g", policy: "passphrase")

        // A copy of the whole data directory, put back after a secret was removed.
        let data = vault.rig.dataDirectory, backup = vault.home.path("backup")
        try FileManager.default.copyItem(atPath: data, toPath: backup)
        #expect(try await vault.run(["secret", "rm", "gone", "--yes"]).status == 0)
        try FileManager.default.removeItem(atPath: data)
        try FileManager.default.copyItem(atPath: backup, toPath: data)
        let refused = try await vault.run(["secret", "list", "--json"])
        #expect(refused.status == 6 && refused.errorCode == "state-tampered", "\(refused.stdout)")
        #expect((refused.json?["message"] as? String)?.contains("older than the TPM's counter") == true, "\(refused.stdout)")
        // The owner may accept the copy, with the passphrase.
        let repaired = try await vault.withPassphrase(["repair", "--json"])
        #expect(repaired.status == 0, "\(repaired.stdout) \(repaired.stderrLines)")
        let listed = try await vault.run(["secret", "list", "--json"])
        #expect(listed.status == 0 && listed.stdout.contains("gone"), "\(listed.stdout)")

        // Every wrong passphrase is the vault's guard's to count, never the TPM's machine-wide
        // counter; at its limit even the right one is refused, and the recovery key binds anew.
        try tpm.setDictionaryAttack(tries: 2, interval: 1000)
        #expect(try await vault.run(["lock"]).status == 0)
        for attempt in 1...9 {
            let wrong = try await vault.withPassphrase(["unlock", "--json"], "wrong \(attempt)")
            #expect(wrong.status == 8, "attempt \(attempt): \(wrong.stdout)")
        }
        let guarded = try await vault.run(["tpm", "status", "--json"])
        #expect(guarded.json?["guard-failures"] as? Int == 9 && guarded.json?["guard-limit"] as? Int == 10
                && guarded.json?["failures"] as? Int == 0, "\(guarded.stdout)")
        #expect(try await vault.withPassphrase(["unlock"], "wrong 10").status != 0)
        let locked = try await vault.withPassphrase(["unlock", "--json"])
        #expect(locked.status == 7 && locked.errorCode == "locked-out", "\(locked.stdout)")
        #expect((locked.json?["message"] as? String)?.contains("touchgate tpm recover") == true, "\(locked.stdout)")
        let lockedStatus = try await vault.run(["tpm", "status"])
        #expect(lockedStatus.stdout.contains("REFUSING the passphrase"), "\(lockedStatus.stdout)")
        let recovered = try await vault.run(["tpm", "recover", "--yes", "--passphrase-fd", "0"],
                                            stdin: Data("\(recovery)\nQuartz-Lantern-Otter-4827\nQuartz-Lantern-Otter-4827\n".utf8))
        #expect(recovered.status == 0, "\(recovered.stdout) \(recovered.stderrLines)")
        #expect(try await vault.withPassphrase(["unlock"], "Quartz-Lantern-Otter-4827").status == 0)
    }

    @Test("a deleted counter and an older copy put back: tpm recover names the rollback against an export, and binds only once it is accepted")
    func recoverNamesRollback() async throws {
        let tpm = try SwtpmRig()
        var vault = try VaultRig()
        vault.rig.process.environment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        try await vault.initAndUnlock()
        let enrolled = try await vault.withPassphrase(["tpm", "enroll", "--json"])
        let recovery = try #require(enrolled.json?["recovery-key"] as? String, "\(enrolled.stdout)")
        let counter = try #require(enrolled.json?["counter-index"] as? String, "\(enrolled.stdout)")
        try await vault.add("kept", "k", policy: "passphrase")
        let data = vault.rig.dataDirectory, backup = vault.home.path("backup")
        try FileManager.default.copyItem(atPath: data, toPath: backup)
        #expect(try await vault.run(["secret", "rm", "kept", "--yes"]).status == 0)
        let exported = try await vault.run(["audit", "export"])
        #expect(exported.status == 0 && exported.stdout.contains("{\"seal\""), "\(exported.stderrLines)")
        let exportPath = vault.home.path("kept-export.json")
        try Data(exported.stdout.utf8).write(to: URL(fileURLWithPath: exportPath))

        // Root deletes the counter and puts the older copy back: nothing in the TPM refuses it now.
        try tpm.tool("tpm2_nvundefine", [counter, "-C", "o"])
        try FileManager.default.removeItem(atPath: data)
        try FileManager.default.copyItem(atPath: backup, toPath: data)
        let blocked = try await vault.run(["secret", "list", "--json"])
        #expect(blocked.status != 0 && (blocked.json?["message"] as? String)?.contains("cleared or replaced") == true,
                "\(blocked.stdout)")
        let answers = Data("\(recovery)\nQuartz-Lantern-Otter-4827\nQuartz-Lantern-Otter-4827\n".utf8)
        // Nobody to answer: the state is shown, named a rollback, and not accepted.
        let declined = try await vault.run(["tpm", "recover", "--checkpoint", exportPath, "--passphrase-fd", "0"],
                                           stdin: answers)
        let shown = declined.stderrLines.joined(separator: "\n")
        #expect(declined.status == 11, "\(declined.stdout) \(shown)")
        #expect(shown.contains("newest change: record #") && shown.contains("OLDER copy: a rollback")
                && shown.contains("counter cannot vouch"), "\(shown)")
        #expect(try await vault.run(["secret", "list", "--json"]).status != 0, "nothing was bound")
        // Accepted on purpose: bound again, and the trail says what was accepted.
        let accepted = try await vault.run(["tpm", "recover", "--checkpoint", exportPath, "--yes", "--passphrase-fd", "0"],
                                           stdin: answers)
        #expect(accepted.status == 0, "\(accepted.stdout) \(accepted.stderrLines)")
        #expect(try await vault.withPassphrase(["unlock"], "Quartz-Lantern-Otter-4827").status == 0)
        let trail = try await vault.run(["audit", "show", "--json"])
        #expect(trail.stdout.contains("\"reason\":\"rollback accepted: newest record #7"), "\(trail.stdout.suffix(600))")
    }

    @Test("init --tpm binds at once and shows the recovery key; without a TPM it makes no vault (exit 69)")
    func initWithTPM() async throws {
        let tpm = try SwtpmRig()
        var vault = try VaultRig()
        vault.rig.process.environment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        let made = try await vault.withPassphrase(["init", "--tpm", "--kdf", "minimum", "--json"])
        #expect(made.status == 0 && (made.json?["recovery-key"] as? String)?.count == 71, "\(made.stdout) \(made.stderrLines)")
        let status = try await vault.run(["tpm", "status", "--json"])
        #expect(status.json?["bound"] as? Bool == true && status.json?["store-counter"] as? Int == status.json?["tpm-counter"] as? Int,
                "\(status.stdout)")

        var nowhere = try VaultRig()
        nowhere.rig.process.environment["TOUCHGATE_TPM_TCTI"] = "swtpm:path=\(nowhere.home.path("no-tpm"))"
        let refused = try await nowhere.withPassphrase(["init", "--tpm", "--kdf", "minimum", "--json"])
        #expect(refused.status == 69 && refused.errorCode == "tpm-unavailable", "\(refused.stdout)")
        let none = try await nowhere.run(["status", "--json"])
        #expect(none.json?["initialized"] as? Bool == false, "\(none.stdout)")
    }

    @Test("holding a read open and cutting the WAL back (an older store, exactly) is refused when bound")
    func walCutRefused() async throws {
        let tpm = try SwtpmRig()
        var vault = try VaultRig()
        vault.rig.process.environment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        try await vault.initAndUnlock()
        #expect(try await vault.withPassphrase(["tpm", "enroll"]).status == 0)
        try await vault.add("kept", "k", policy: "passphrase")

        // A reader holding a snapshot keeps the commits after it in the WAL, uncheckpointed.
        let database = vault.databasePath
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        reader.arguments = ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("BEGIN"); c.execute("SELECT count(*) FROM audit").fetchall()
            print("ready", flush=True); sys.stdin.read()
            """, database]
        let input = Pipe(), output = Pipe()
        reader.standardInput = input
        reader.standardOutput = output
        try reader.run()
        let ready = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        try #require(ready.contains("ready"), "python3's sqlite3 reader did not start: \(ready)")
        let wal = database + "-wal"
        let before = try #require(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int)

        #expect(try await vault.run(["secret", "rm", "kept", "--yes"]).status == 0)
        // Cut: the reader killed (no checkpoint), the WAL back to its length before, its index gone.
        kill(reader.processIdentifier, SIGKILL)
        reader.waitUntilExit()
        try #require(truncate(wal, off_t(before)) == 0)
        try? FileManager.default.removeItem(atPath: database + "-shm")

        let refused = try await vault.run(["secret", "list", "--json"])
        #expect(refused.status == 6 && (refused.json?["message"] as? String)?.contains("older than the TPM's counter") == true,
                "\(refused.stdout)")
    }
}
