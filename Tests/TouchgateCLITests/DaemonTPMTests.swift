import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The TPM is shared by every user of touchgated (issue 46): run as installed (its own
/// uid, users the test makes, swtpm), one user's wrong passphrases must not lock another
/// user's TPM-bound vault, and where the TPM is is the daemon's setting, not a client's.
@Suite("touchgated: one TPM, many users", .serialized)
struct DaemonTPMTests {
    @Test("one user's wrong passphrases leave another user's TPM-bound unlock working; a client's TOUCHGATE_TPM_TCTI is ignored")
    func wrongPassphrasesStayWithTheirVault() async throws {
        try DaemonAttackTests.requireRoot()
        let users = try await TestUsers()
        let tpm = try SwtpmRig()
        tpm.allowConnections(from: DaemonRig.daemonUID)
        // The machine-wide lockout as tight as Debian's swtpm default is loose: three wrong
        // authorizations it counts would lock the whole TPM for the test's length.
        try tpm.setDictionaryAttack(tries: 3, interval: 1000)
        let rig = try await DaemonRig()
        rig.daemonEnvironment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        rig.daemonArguments = ["--request-burst", "1000", "--requests-per-minute", "60000"]
        try await rig.start()
        for user in [users.attacker, users.victim] {
            try await rig.initialize(as: user.uid)
            let bound = try await rig.withPassphrase(["tpm", "enroll", "--json"], as: user.uid)
            #expect(bound.status == 0, "tpm enroll: \(bound.stdout) \(bound.stderrLines)\n\(rig.logTail)")
        }
        let item = try await rig.run(["secret", "add", "kept", "--policy", "passphrase"],
                                     stdin: Data("victim's value\n".utf8), as: users.victim.uid)
        #expect(item.status == 0, "\(item.stderrLines)")

        // The attacker guesses at her own vault until its guard refuses everything.
        #expect(try await rig.run(["lock"], as: users.attacker.uid).status == 0)
        for attempt in 1...12 {
            let guess = try await rig.run(["unlock", "--json", "--passphrase-fd", "0"],
                                          stdin: Data("guess \(attempt)\n".utf8), as: users.attacker.uid)
            #expect(guess.status == (attempt < 10 ? 8 : 7), "guess \(attempt): \(guess.stdout) \(guess.stderrLines)")
        }
        // The victim's vault opens with her passphrase, through the same TPM.
        #expect(try await rig.run(["lock"], as: users.victim.uid).status == 0)
        let unlocked = try await rig.withPassphrase(["unlock", "--json"], as: users.victim.uid)
        #expect(unlocked.status == 0, "the victim's unlock: \(unlocked.stdout) \(unlocked.stderrLines)\n\(rig.logTail)")
        let got = try await rig.run(["secret", "get", "kept", "--passphrase-fd", "0"],
                                    stdin: Data((DaemonRig.passphrase + "\n").utf8), as: users.victim.uid)
        #expect(got.status == 0 && got.stdout.contains("victim's value"), "\(got.stderrLines)")
        // The TPM's own counter saw none of it; each vault shows its own guard.
        var misdirected = rig.client(as: users.victim.uid)
        misdirected.environment["TOUCHGATE_TPM_TCTI"] = "swtpm:path=/nonexistent/tpm.sock"
        let victimStatus = try await misdirected.run(["tpm", "status", "--json"])
        #expect(victimStatus.status == 0 && victimStatus.json?["problem"] == nil
                && victimStatus.json?["failures"] as? Int == 0 && victimStatus.json?["guard-failures"] as? Int == 0,
                "\(victimStatus.stdout) \(victimStatus.stderrLines)")
        let attackerStatus = try await rig.run(["tpm", "status", "--json"], as: users.attacker.uid)
        #expect(attackerStatus.json?["guard-failures"] as? Int == 10, "\(attackerStatus.stdout)")
    }

    @Test("after an unclean TPM restart under a running touchgated, an older copy of a user's store put back by root is refused")
    func olderCopyAfterUncleanRestart() async throws {
        try DaemonAttackTests.requireRoot()
        let users = try await TestUsers()
        let tpm = try SwtpmRig()
        tpm.allowConnections(from: DaemonRig.daemonUID)
        let rig = try await DaemonRig()
        rig.daemonEnvironment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        try await rig.start()
        let user = users.victim
        try await rig.initialize(as: user.uid)
        #expect(try await rig.withPassphrase(["tpm", "enroll"], as: user.uid).status == 0, "\(rig.logTail)")
        for name in ["kept", "gone"] {
            let added = try await rig.run(["secret", "add", name, "--policy", "passphrase"],
                                          stdin: Data("value of \(name)\n".utf8), as: user.uid)
            #expect(added.status == 0, "\(added.stderrLines)")
        }
        // Root keeps a copy of the user's store; then the user deletes a secret.
        let store = rig.stateDirectory + "/users/\(user.uid)", copy = rig.home.path("copy-of-store")
        #expect(try await runProgram("/bin/cp", ["-a", store, copy]).status == 0)
        #expect(try await rig.run(["secret", "rm", "gone", "--yes"], as: user.uid).status == 0)
        // The TPM loses power while the daemon runs; the next change adopts its counter's jump.
        tpm.kill9()
        try tpm.start()
        tpm.allowConnections(from: DaemonRig.daemonUID)
        let after = try await rig.run(["secret", "add", "after", "--policy", "passphrase"],
                                      stdin: Data("later\n".utf8), as: user.uid)
        #expect(after.status == 0, "\(after.stderrLines)\n\(rig.logTail)")
        let adopted = try await rig.run(["tpm", "status", "--json"], as: user.uid)
        #expect(adopted.json?["counter-adopted-at"] != nil && adopted.json?["store-counter"] as? Int == adopted.json?["tpm-counter"] as? Int,
                "\(adopted.stdout)")
        // Later, root puts the older copy back and the daemon starts again.
        rig.stop()
        #expect(try await runProgram("/bin/rm", ["-rf", store]).status == 0)
        #expect(try await runProgram("/bin/cp", ["-a", copy, store]).status == 0)
        try await rig.start()
        let refused = try await rig.run(["secret", "list", "--json"], as: user.uid)
        #expect(refused.status == 6 && (refused.json?["message"] as? String)?.contains("older than the TPM's counter") == true,
                "the older copy: \(refused.stdout) \(refused.stderrLines)\n\(rig.logTail)")
        #expect(!refused.stdout.contains("\"gone\""))
    }

    @Test("a TPM-bound personal vault migrated into touchgated on the same TPM keeps its guard, its counter and its secrets")
    func migrateBoundVault() async throws {
        let tpm = try SwtpmRig()
        tpm.allowConnections(from: DaemonRig.daemonUID)
        let rig = try await DaemonRig()
        rig.daemonEnvironment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        var personal = PersonalSide(rig)
        personal.environment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        try await personal.makeVault()
        let bound = try await personal.run(["tpm", "enroll", "--json", "--passphrase-fd", "0"],
                                           stdin: Data((DaemonRig.passphrase + "\n").utf8))
        #expect(bound.status == 0, "\(bound.stdout) \(bound.stderrLines)")
        try await rig.start()
        var client = rig.client()
        client.environment["TOUCHGATE_TPM_TCTI"] = tpm.tcti
        let moved = try await client.run(["migrate", "--json", "--passphrase-fd", "0"],
                                         stdin: Data((DaemonRig.passphrase + "\n").utf8))
        #expect(moved.status == 0, "migrate: \(moved.stdout) \(moved.stderrLines)\n\(rig.daemonLog)")
        // Through the daemon: bound, in step, the guard at zero; the passphrase opens it through the TPM.
        let status = try await rig.run(["tpm", "status", "--json"])
        #expect(status.json?["bound"] as? Bool == true && status.json?["problem"] == nil
                && status.json?["store-counter"] as? Int == status.json?["tpm-counter"] as? Int
                && status.json?["guard-failures"] as? Int == 0, "\(status.stdout) \(status.stderrLines)\n\(rig.logTail)")
        #expect(try await rig.run(["lock"]).status == 0)
        let wrong = try await rig.run(["unlock", "--json", "--passphrase-fd", "0"], stdin: Data("not it\n".utf8))
        #expect(wrong.status == 8, "\(wrong.stdout)")
        let unlocked = try await rig.withPassphrase(["unlock", "--json"])
        #expect(unlocked.status == 0, "\(unlocked.stdout) \(unlocked.stderrLines)\n\(rig.logTail)")
        let api = try await rig.run(["secret", "get", "api", "--json"], presenting: ["whorl"])
        #expect(api.status == 0 && api.json?["value"] as? String == "token-123", "\(api.stderrLines)\n\(rig.logTail)")
    }
}
