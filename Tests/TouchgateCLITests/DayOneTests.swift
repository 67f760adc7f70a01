import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Day one as a new user: nothing lost without a question, prompts that forgive typos,
/// honest JSON and exit codes, plain words.
@Suite(.serialized, .timeLimit(.minutes(8)))
struct DayOneTests {
    @Test func initUnlocksTheNewVaultAndRefusesAWeakPassphrase() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let weak = try await vault.withPassphrase(["init", "--kdf", "minimum", "--json"], "hunter22")
        #expect(weak.status == 11, "\(weak.stderrLines)")
        #expect(weak.errorCode == "weak-passphrase")
        #expect(try await vault.status()["initialized"] as? Bool == false, "nothing was created")

        let created = try await vault.withPassphrase(["init", "--kdf", "minimum"])
        #expect(created.status == 0, "\(created.stderrLines)")
        let status = try await vault.status()
        #expect(status["locked"] as? Bool == false, "init leaves the vault unlocked")
        #expect(status["passphrase-required"] == nil, "the passphrase was just entered")
        try await vault.add("x", "v", policy: "passphrase")  // needs the unlocked vault
    }

    @Test("a weak passphrase is refused as soon as it is typed, before it is asked again")
    func aWeakPassphraseIsRefusedBeforeTheRepeat() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let typed = try await vault.onTerminal(["init", "--kdf", "minimum"],
                                               typing: ["hunter22", VaultRig.passphrase, VaultRig.passphrase])
        #expect(typed.status == 0, "\(typed.stdout)")
        let refused = try #require(typed.stdout.range(of: "passphrase refused"), "\(typed.stdout)")
        let repeats = typed.stdout.components(separatedBy: "Repeat it:").count - 1
        #expect(repeats == 1, "the weak one was not asked for twice: \(typed.stdout)")
        #expect(typed.stdout.range(of: "Repeat it:").map { $0.lowerBound > refused.upperBound } == true, "\(typed.stdout)")
        #expect(try await vault.status()["initialized"] as? Bool == true)
    }

    @Test func aMistypedPassphraseCanBeRetypedTwice() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        #expect(try await vault.run(["lock"]).status == 0)
        let unlocked = try await vault.onTerminal(["unlock"], typing: ["typo one", "typo two", VaultRig.passphrase])
        #expect(unlocked.status == 0, "\(unlocked.stdout)")
        #expect(unlocked.stdout.components(separatedBy: "wrong passphrase; try again").count == 3, "\(unlocked.stdout)")
        #expect(try await vault.status()["locked"] as? Bool == false)
        let records = try #require(try await vault.run(["audit", "show", "--json"]).json?["records"] as? [[String: Any]])
        let wrong = records.filter { ($0["reason"] as? String)?.contains("wrong passphrase") == true }
        #expect(wrong.count == 2, "each wrong try is on record")

        #expect(try await vault.run(["lock"]).status == 0)
        let threeWrong = try await vault.onTerminal(["unlock"], typing: ["a", "b", "c"])
        #expect(threeWrong.status == 8, "\(threeWrong.stdout)")
        #expect(try await vault.status()["locked"] as? Bool == true)
    }

    @Test("init in a revoked session keyring (a tmux that outlived its login): refused before anything is made, no key left in the keyring, and it works from a usable session")
    func initWithRevokedSessionKeyring() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "this test needs python3: apt-get install python3")
        // A session keyring of its own, revoked, then touchgate: the user keyring is reachable
        // but no longer possessed, so a key added there cannot be given its permissions.
        let revoked = """
            import ctypes, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.syscall(250, 1, None) < 0 or libc.syscall(250, 3, ctypes.c_long(-3)) < 0:
                sys.exit("keyctl: %d" % ctypes.get_errno())
            os.execv(sys.argv[1], sys.argv[1:])
            """
        var process = vault.rig.process
        process.wrapper = ["/usr/bin/python3", "-c", revoked]
        let refused = try await process.run(["init", "--kdf", "minimum", "--passphrase-fd", "0"],
                                            stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(refused.status == 5, "\(refused.stderrLines)")
        #expect(refused.stderrLines.joined().contains("kernel keyring cannot keep the vault key"), "\(refused.stderrLines)")
        // Nothing half made: no vault, and no probe or vault key left in the user's keyring.
        let status = try await vault.run(["status", "--json"])
        #expect(status.json?["initialized"] as? Bool == false, "\(status.stdout)")
        let keys = (try? String(contentsOfFile: "/proc/keys", encoding: .utf8)) ?? ""
        #expect(!keys.contains("touchgate:probe:"), "\(keys)")
        // From a usable session the same command succeeds.
        let created = try await vault.withPassphrase(["init", "--kdf", "minimum"])
        #expect(created.status == 0, "\(created.stderrLines)")
    }

    @Test func enrollListsWhatItWouldDestroyAndAsks() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("bound", "b", policy: "biometry-current-set")
        // "n" at the question: nothing changes and no finger or passphrase is asked for.
        let declined = try await vault.onTerminal(["enroll", "--finger", "left-thumb"], typing: ["n"],
                                                  presenting: ["arch"], errorsApart: true)
        #expect(declined.status == 11, "\(declined.stdout) \(declined.stderrLines)")
        #expect(declined.stdout.contains("bound") && declined.stdout.contains("[y/N]"), "\(declined.stdout)")
        // The answer is asked for on a line of its own, not after the last item of the list.
        let promptLine = declined.stdout.split(whereSeparator: \.isNewline).first { $0.contains("[y/N]") }
        #expect(promptLine?.trimmingCharacters(in: .whitespaces).hasPrefix("[y/N]") == true, "\(declined.stdout)")
        // A "no" is reported as not confirmed, not as something left to do at the terminal.
        #expect(declined.stderrLines.joined().contains("not confirmed, so nothing was changed"), "\(declined.stderrLines)")
        #expect(!(declined.stdout + declined.stderrLines.joined()).contains("Confirm at the terminal"), "\(declined.stderrLines)")
        #expect(declined.fingerPrompts == 0)
        #expect(!declined.stdout.contains("Passphrase"))
        #expect((try await vault.run(["prints", "list", "--json"]).json?["prints"] as? [Any])?.count == 1)
        // "y", then the passphrase: enrolled, and it says what was destroyed.
        let accepted = try await vault.onTerminal(["enroll", "--finger", "left-thumb"], typing: ["y", VaultRig.passphrase],
                                                  presenting: ["arch"], errorsApart: true)
        #expect(accepted.status == 0, "\(accepted.stdout) \(accepted.stderrLines)")
        #expect(accepted.stdout.contains("Destroyed") && accepted.stdout.contains("bound"), "\(accepted.stdout)")
    }

    @Test func replacingOrDeletingASecretIsConfirmed() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.add("token", "one", policy: "passphrase")
        let declined = try await vault.onTerminal(["secret", "add", "token", "--policy", "passphrase"], typing: ["n"])
        #expect(declined.status == 9, "\(declined.stdout)")
        #expect(declined.stdout.contains("Replace it?"))
        let kept = try await vault.withPassphrase(["secret", "get", "token"])
        #expect(kept.released == "one")

        let removeDeclined = try await vault.onTerminal(["secret", "rm", "token"], typing: ["no"])
        #expect(removeDeclined.status == 11, "\(removeDeclined.stdout)")
        #expect(removeDeclined.stdout.contains("not confirmed, so 'token' was not deleted"), "\(removeDeclined.stdout)")
        // With no terminal to ask at, the refusal says how to confirm.
        let unasked = try await vault.run(["secret", "rm", "token"])
        #expect(unasked.status == 11 && unasked.stderrLines.joined().contains("where no terminal can ask, pass --yes to confirm"),
                "\(unasked.stderrLines)")
        let removed = try await vault.onTerminal(["secret", "rm", "token"], typing: ["yes"])
        #expect(removed.status == 0, "\(removed.stdout)")
        #expect(try await vault.run(["secret", "get", "token"]).status == 10, "not found")
    }

    @Test func jsonMeansOneResultAndEveryFailureHasItsOwnCode() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        #expect(try await vault.run(["secret", "list", "--json"]).errorCode == "no-vault")
        #expect(try await vault.run(["secret", "list"]).status == 10, "no vault yet: not found")
        try await vault.initAndUnlock()
        #expect(try await vault.withPassphrase(["init", "--kdf", "minimum"]).status == 9, "already exists")
        try await vault.add("token", "ghp_s3cret", policy: "passphrase")
        let released = try await vault.run(["secret", "get", "token", "--json", "--passphrase-fd", "0"],
                                           stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(released.status == 0)
        #expect(released.json?["value"] as? String == "ghp_s3cret", "the value is a field of the one JSON result")
        #expect(released.json?["result"] as? String == "released")
        #expect(released.stdout.split(separator: "\n").count == 1)
        #expect(try await vault.run(["secret", "get", "nothing"]).status == 10)
        #expect(try await vault.run(["audit", "prune", "--before", "2999-01-01"]).status == 11, "inside the retention")
    }

    @Test("a mistyped policy is an error like every other: touchgate's prefix, exit 64, --json, nothing stored")
    func aMistypedPolicyIsReportedLikeEveryError() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let typo = try await vault.run(["secret", "add", "x", "--policy", "biometry-anyy"], stdin: Data("v\n".utf8))
        #expect(typo.status == 64, "\(typo.stderrLines)")
        #expect(typo.stderrLines.first?.hasPrefix("touchgate: invalid policy: unknown access flag 'biometry-anyy' "
                                                  + "(did you mean biometry-any?); a policy is") == true, "\(typo.stderrLines)")
        #expect(!typo.stderrLines.joined().contains("offset"), "\(typo.stderrLines)")
        let json = try await vault.run(["secret", "add", "x", "--policy", "passphrase &", "--json"], stdin: Data("v\n".utf8))
        #expect(json.status == 64 && json.json?["error"] as? String == "usage", "\(json.stdout)")
        #expect((try await vault.run(["secret", "list", "--json"]).json?["items"] as? [Any])?.isEmpty == true)
        // Times read as everywhere else: minutes and seconds, not a count of seconds.
        let shown = try await vault.run(["policy", "show"]).stdout
        #expect(shown.contains("for 15 min\n") && shown.contains("5 min after a touch, ended by 2 min idle"), "\(shown)")
    }

    @Test func aMistypedCommandSuggestsTheRightOne() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let enrol = try await vault.run(["enrol"])
        #expect(enrol.status == 64)
        #expect(enrol.stderrLines.joined().contains("Did you mean: touchgate enroll?"), "\(enrol.stderrLines)")
        let gte = try await vault.run(["secret", "gte", "x"])
        #expect(gte.stderrLines.joined().contains("touchgate secret get"), "\(gte.stderrLines)")
    }

    @Test func statusSpeaksPlainly() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        for _ in 1...3 { _ = try await vault.run(["verify"], presenting: ["arch"]) }
        let text = try await vault.run(["status"]).stdout
        #expect(text.contains("vault: unlocked: the key is kept until"), "\(text)")
        #expect(text.contains("min") && text.contains("left (touchgate unlock lifts it now)"), "\(text)")
        #expect(text.contains("touch: needed"), "\(text)")
        #expect(!text.contains("not-entered-since-boot"))
        // The passphrase lifts it, and says so.
        let unlocked = try await vault.withPassphrase(["unlock"])
        #expect(unlocked.status == 0 && unlocked.stdout.contains("the lockout is lifted"), "\(unlocked.stdout)")
        let again = try await vault.withPassphrase(["unlock", "--json"])
        #expect(again.status == 0 && again.json?["lockout-lifted"] == nil, "nothing to lift: \(again.stdout)")
    }

    @Test("status right after a touch says the reuse does not cover --fresh secrets")
    func reuseWindowNamesFreshSecrets() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("fresh", "f", policy: "biometry-any", fresh: true)
        let released = try await vault.run(["secret", "get", "fresh"], presenting: ["whorl"])
        #expect(released.status == 0, "\(released.stderrLines)")
        let text = try await vault.run(["status"]).stdout
        #expect(text.contains("touch: not needed for the next") && text.contains("--fresh still ask every time"), "\(text)")
    }

    @Test func aFallbackToThePassphraseIsSaid() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("either", "e", policy: "user-presence", fresh: true)
        for _ in 1...3 { _ = try await vault.run(["verify"], presenting: ["arch"]) }
        let released = try await vault.run(["secret", "get", "either", "--json", "--passphrase-fd", "0"],
                                           stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(released.status == 0, "\(released.stderrLines)")
        let asked = released.events.first { $0["event"] as? String == "passphrase-needed" }?["message"] as? String
        #expect(asked?.contains("Too many failed fingerprint attempts") == true, "\(String(describing: asked))")
        #expect(asked?.contains("Instead") == true)
    }

    @Test func noTouchIsAskedForWhenThereIsNoReader() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "t", policy: "biometry-any")
        var process = vault.rig.process
        process.environment["FP_DRIVERS_WHITELIST"] = "no_such_driver"
        let result = try await process.run(["secret", "get", "token", "--json"])
        #expect(result.status == 2, "\(result.stderrLines)")
        #expect(!result.eventNames.contains("touch-needed"))
    }

    @Test func ctrlCDuringKeyStretchingLeavesTheVaultLocked() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        // The real cost (MODERATE Argon2id, about half a second here), so there is time to interrupt it.
        let created = try await vault.withPassphrase(["init"])
        try #require(created.status == 0, "\(created.stderrLines)")
        #expect(try await vault.run(["lock"]).status == 0)
        let result = try await vault.rig.process.run(["unlock", "--json", "--passphrase-fd", "0"],
                                                     stdin: VaultRig.lines(VaultRig.passphrase)) { line, process in
            if line.contains("\"event\":\"passphrase-needed\"") {
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { kill(process.processIdentifier, SIGINT) }
            }
        }
        #expect(result.status == 130, "\(result.stderrLines)")
        #expect(try await vault.status()["locked"] as? Bool == true, "a cancelled unlock leaves no key behind")
    }
}
