import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `pam_touchgate.so`, built by `make pam`, in real PAM stacks: a small C program
/// (Tests/PAMPrograms/pam-run.c) calls `pam_start_confdir` on stacks the test writes into a
/// private directory, with touchgated on a test socket and a virtual_image reader. The
/// password modules beside it are real too: `pam_userdb` with a database the test makes.
@Suite("PAM module", .serialized, .timeLimit(.minutes(5)))
struct PAMTests {
    @Test("a touch: success, remote session, timeout, max-tries, then the daemon's lockout")
    func touch() async throws {
        let pam = try await PAMRig()
        try await pam.rig.start()
        try await pam.rig.initialize()
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket) timeout=20"])

        let matched = try await pam.authenticate(touch, presenting: ["whorl"], options: ["rhost=localhost"])
        #expect(matched.result == "PAM_SUCCESS", "\(matched)\n\(pam.rig.daemonLog)")
        #expect(matched.prompts == 1, "one touch: \(matched)")
        // Audited by the daemon, naming the program that asked.
        let reasons = try await pam.auditReasons(event: "auth.attempt")
        #expect(reasons.contains { $0.contains("pam-run") }, "\(reasons)")
        // Without logind on the bus the daemon cannot tell a remote session: it proceeds, and says so.
        #expect(pam.rig.daemonLog.contains("local-only: cannot ask systemd-logind"), "\(pam.rig.daemonLog)")

        let remote = try await pam.authenticate(touch, presenting: ["whorl"], options: ["rhost=far.example.org"])
        #expect(remote.result == "PAM_AUTHINFO_UNAVAIL" && remote.prompts == 0, "a remote session gets no touch: \(remote)")

        let slow = try pam.stack("slow", ["auth required \(pam.module) socket=\(pam.socket) timeout=1"])
        let started = Date()
        let timedOut = try await pam.authenticate(slow, presenting: [])
        #expect(timedOut.result == "PAM_AUTHINFO_UNAVAIL", "\(timedOut)")
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(timedOut.messages.contains { $0.contains("timed out") }, "\(timedOut)")

        let twice = try pam.stack("twice", ["auth required \(pam.module) socket=\(pam.socket) max-tries=2"])
        let exhausted = try await pam.authenticate(twice, presenting: ["arch", "arch"])
        #expect(exhausted.result == "PAM_MAXTRIES", "\(exhausted)\n\(pam.rig.daemonLog)")
        #expect(exhausted.prompts == 2, "the timed-out request released the reader, and each try asked once: \(exhausted)")

        // A match resets the count; then three no-matches start the daemon's lockout, and
        // max-tries does not outlast it.
        #expect(try await pam.authenticate(touch, presenting: ["whorl"]).result == "PAM_SUCCESS")
        let many = try pam.stack("many", ["auth required \(pam.module) socket=\(pam.socket) max-tries=5"])
        let lockedOut = try await pam.authenticate(many, presenting: ["arch"])
        #expect(lockedOut.result == "PAM_AUTH_ERR" && lockedOut.prompts == 3, "\(lockedOut)")
        // A no-match is worded as `touchgate verify` words it, with the count.
        #expect(lockedOut.messages.contains { $0.contains("Fingerprint: no match (2 more before a lockout).") }, "\(lockedOut)")
        let refused = try await pam.authenticate(many, presenting: ["whorl"])
        #expect(refused.result == "PAM_AUTH_ERR", "\(refused)")
        #expect(refused.prompts == 0, "a lockout opens no reader: \(refused)")
        #expect(refused.messages.contains { $0.hasPrefix("error: ") && $0.contains("lock") }, "\(refused)")
    }

    @Test("logind's word on the session, asked from the peer's pid: remote refuses before the reader, audited; local or none touches")
    func logindSession() async throws {
        let (logind, pam) = try await PAMRig.withLogind()
        defer { logind.stop() }
        let stored = try await pam.rig.run(["secret", "add", "login", "--policy", "biometry-any"],
                                           stdin: Data("keyring password\n".utf8))
        #expect(stored.status == 0, "\(stored.stderrLines)")
        try await logind.addSession("c1", uid: 0, user: "root", remote: false)
        try await logind.addSession("c2", uid: 0, user: "root", remote: true)
        try await logind.addSession("c3", uid: 0, user: "root", remote: false, seated: false)
        // No PAM_RHOST in any of these: only logind can tell the module's process is remote.
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket) debug"])
        let handoff = try pam.stack("handoff", ["auth required \(pam.module) socket=\(pam.socket) authtok-from=login"])

        // The stand-in knows pam-run in no session (a process started outside any login): as without logind.
        let outside = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(outside.result == "PAM_SUCCESS" && outside.prompts == 1, "\(outside)\n\(pam.rig.daemonLog)")
        #expect(pam.rig.daemonLog.contains("is in no systemd-logind session; proceeding"), "\(pam.rig.daemonLog)")

        try logind.placeProcesses(named: "pam-run", inSession: "c1")
        let local = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(local.result == "PAM_SUCCESS" && local.prompts == 1, "\(local)\n\(pam.rig.daemonLog)")
        #expect(pam.rig.daemonLog.contains("logind session c1 is local"), "\(pam.rig.daemonLog)")

        // The same program in a remote session: refused before the reader, for a touch and
        // for a release alike, and each refusal is in the trail of the user asked about.
        try logind.placeProcesses(named: "pam-run", inSession: "c2")
        let remote = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(remote.result == "PAM_AUTHINFO_UNAVAIL" && remote.prompts == 0, "\(remote)\n\(pam.rig.daemonLog)")
        #expect(remote.messages.isEmpty, "nothing to show for a remote session: \(remote)")
        let release = try await pam.authenticate(handoff, presenting: ["whorl"])
        #expect(release.result == "PAM_AUTHINFO_UNAVAIL" && release.prompts == 0, "\(release)")
        let reasons = try await pam.auditReasons(event: "access.denied")
        #expect(reasons.count == 2, "\(reasons)")
        #expect(reasons.contains { $0.hasPrefix("verify: ") && $0.contains("c2") && $0.contains("remote") }, "\(reasons)")
        #expect(reasons.contains { $0.hasPrefix("secret.get: ") && $0.contains("remote") }, "\(reasons)")

        // A local session at no seat (no screen and keyboard here): refused the same way, at once.
        try logind.placeProcesses(named: "pam-run", inSession: "c3")
        let started = Date()
        let seatless = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(seatless.result == "PAM_AUTHINFO_UNAVAIL" && seatless.prompts == 0, "\(seatless)\n\(pam.rig.daemonLog)")
        #expect(Date().timeIntervalSince(started) < 1, "refused at once")
        #expect(pam.rig.daemonLog.contains("logind session c3 is at no seat; refused"), "\(pam.rig.daemonLog)")
        let denied = try await pam.auditReasons(event: "access.denied")
        #expect(denied.count == 3 && denied.last?.contains("no seat") == true, "\(denied)")

        // Back in the local session, the touch works again: a refusal is no failed touch.
        try logind.placeProcesses(named: "pam-run", inSession: "c1")
        let again = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(again.result == "PAM_SUCCESS" && again.prompts == 1, "\(again)")
    }

    @Test("a closed lid over a built-in reader: the module falls through to the password at once, audited; open, the touch works")
    func closedLid() async throws {
        let (logind, pam) = try await PAMRig.withLogind(["--reader-placement", "built-in"])
        defer { logind.stop() }
        try await logind.addSession("c1", uid: 0, user: "root", remote: false)
        try logind.placeProcesses(named: "pam-run", inSession: "c1")
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket) debug"])

        try await logind.setLid(closed: true, docked: true)
        let started = ContinuousClock.now
        let closed = try await pam.authenticate(touch, presenting: ["whorl"])
        let took = started.duration(to: .now)
        #expect(closed.result == "PAM_AUTHINFO_UNAVAIL" && closed.prompts == 0, "\(closed)\n\(pam.rig.daemonLog)")
        #expect(took < .seconds(1), "the refusal took \(took): it must not wait for the finger deadline")
        #expect(pam.rig.daemonLog.contains("the lid is closed and the reader is built in"), "\(pam.rig.daemonLog)")
        let reasons = try await pam.auditReasons(event: "auth.attempt")
        #expect(reasons.contains { $0.contains("reader unavailable") }, "the refusal is in the trail: \(reasons)")
        // The CLI through the daemon says why and what to do.
        let verify = try await pam.rig.run(["verify"], presenting: ["whorl"])
        #expect(verify.status != 0 && verify.stderrLines.joined().contains("the lid is closed"), "\(verify.stderrLines)")

        // The lid opened: the finger is asked for again, and a refusal counted no failure.
        try await logind.setLid(closed: false)
        let open = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(open.result == "PAM_SUCCESS" && open.prompts == 1, "\(open)\n\(pam.rig.daemonLog)")
    }

    @Test("a closed lid with the reader placement left to auto: refused when undocked, asked for when docked")
    func closedLidAuto() async throws {
        let (logind, pam) = try await PAMRig.withLogind()
        defer { logind.stop() }
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket)"])
        try await logind.setLid(closed: true, docked: false)
        let undocked = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(undocked.result == "PAM_AUTHINFO_UNAVAIL" && undocked.prompts == 0, "\(undocked)\n\(pam.rig.daemonLog)")
        try await logind.setLid(closed: true, docked: true)
        let docked = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(docked.result == "PAM_SUCCESS" && docked.prompts == 1, "\(docked)\n\(pam.rig.daemonLog)")
    }

    @Test("no daemon, or a user with nothing enrolled: the stack falls through to the password, and no store is made")
    func unavailable() async throws {
        let pam = try await PAMRig()
        try await pam.rig.start()
        let database = try await pam.passwordDatabase("db", user: "root", password: "login password")
        let absent = try pam.stack("absent", [
            "auth sufficient \(pam.module) socket=\(pam.rig.home.path("run/no-such-socket"))",
            "auth required pam_userdb.so db=\(database)",
        ])
        let typed = try await pam.authenticate(absent, password: "login password")
        #expect(typed.result == "PAM_SUCCESS", "the password still works: \(typed)")
        #expect(typed.messages.contains { $0.hasPrefix("prompt: ") }, "\(typed)")
        let wrong = try await pam.authenticate(absent, password: "not it")
        #expect(wrong.result == "PAM_AUTH_ERR", "\(wrong)")

        // Nobody has enrolled anything: unavailable, and the daemon made no store for asking.
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket)"])
        let nothing = try await pam.authenticate(touch, user: "nobody", presenting: ["whorl"])
        #expect(nothing.result == "PAM_AUTHINFO_UNAVAIL" && nothing.prompts == 0, "\(nothing)")
        let unlock = try pam.stack("unlock", [
            "auth required pam_userdb.so db=\(database)",
            "auth optional \(pam.module) socket=\(pam.socket) unlock-with-password",
        ])
        _ = try await pam.authenticate(unlock, user: "root", password: "login password")
        let users = (try? FileManager.default.contentsOfDirectory(atPath: pam.rig.stateDirectory + "/users")) ?? []
        #expect(users.isEmpty, "stores made for users who have none: \(users)")

        // make install-pam stages the module where Linux-PAM looks, and uninstall-pam removes it.
        let stage = pam.rig.home.path("stage")
        let build = URL(fileURLWithPath: pam.module).deletingLastPathComponent().path
        for target in ["install-pam", "uninstall-pam"] {
            let made = try await runProgram("/usr/bin/make", ["-C", Fixtures.packageRoot.path, target, "DESTDIR=\(stage)",
                                                              "PAMDIR=/lib/security", "PAMBUILD=\(build)"])
            #expect(made.status == 0, "make \(target): \(made.stdout)\(made.stderr)")
            let installed = FileManager.default.fileExists(atPath: stage + "/lib/security/pam_touchgate.so")
            #expect(installed == (target == "install-pam"), "after make \(target)")
        }
    }

    @Test("unlock-with-password: the login password unlocks the vault when it is the passphrase, and a wrong one costs nothing")
    func unlockWithPassword() async throws {
        let pam = try await PAMRig()
        try await pam.rig.start()
        try await pam.rig.initialize()
        // A restart drops the key: the vault waits for its passphrase, and a touch is unavailable.
        pam.rig.stop()
        try await pam.rig.start()
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket)"])
        let locked = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(locked.result == "PAM_AUTHINFO_UNAVAIL", "\(locked)")

        let other = try await pam.passwordDatabase("other", user: "root", password: "a login password")
        let right = try await pam.passwordDatabase("right", user: "root", password: DaemonRig.passphrase)
        func stack(_ database: String) throws -> String {
            try pam.stack("unlock-\(URL(fileURLWithPath: database).lastPathComponent)", [
                "auth required pam_userdb.so db=\(database)",
                "auth optional \(pam.module) socket=\(pam.socket) unlock-with-password",
            ])
        }
        let differs = try await pam.authenticate(try stack(other), password: "a login password")
        #expect(differs.result == "PAM_SUCCESS", "the login itself is the password module's: \(differs)")
        let still = try await pam.rig.run(["status", "--json"])
        #expect(still.json?["locked"] as? Bool == true, "\(still.stdout)")
        let lockout = still.json?["lockout"] as? [String: Any]
        #expect(lockout?["consecutive-failures"] as? Int == 0 && lockout?["locked-out"] as? Bool == false,
                "a password that is not the passphrase counts toward no lockout: \(still.stdout)")

        let same = try await pam.authenticate(try stack(right), password: DaemonRig.passphrase)
        #expect(same.result == "PAM_SUCCESS", "\(same)")
        let unlocked = try await pam.rig.run(["status", "--json"])
        #expect(unlocked.json?["locked"] as? Bool == false, "\(unlocked.stdout)\n\(pam.rig.daemonLog)")
        #expect(try await pam.authenticate(touch, presenting: ["whorl"]).result == "PAM_SUCCESS")

        // Unlocked, the passphrase is not due: the daemon (asked `only-if-due`) asks for none,
        // so a login password that differs is never tried, and no wrong passphrase is recorded.
        func unlockRecords() async throws -> [[String: Any]] {
            let shown = try await pam.rig.run(["audit", "show", "--json", "--event", "vault.unlock"])
            return try #require(shown.json?["records"] as? [[String: Any]], "\(shown.stdout)\(shown.stderrLines)")
        }
        let before = try await unlockRecords()
        let notDue = try await pam.authenticate(try stack(other), password: "a login password")
        #expect(notDue.result == "PAM_SUCCESS", "\(notDue)")
        let after = try await unlockRecords()
        #expect(after.count == before.count, "a password was tried though nothing was due: \(after.suffix(2))")
        #expect(before.contains { $0["outcome"] as? String == "failure" } && before.contains { $0["outcome"] as? String == "success" },
                "the locked vault's two tries are both recorded: \(before)")
    }

    @Test("authtok-from: one touch releases the item as PAM_AUTHTOK for the module below; a screen locker asks for itself")
    func authtokHandOff() async throws {
        let pam = try await PAMRig()
        try await pam.rig.start()
        let nobody = DaemonRig.otherUID
        try await pam.rig.initialize(as: nobody)
        let stored = try await pam.rig.run(["secret", "add", "login", "--policy", "biometry-any"],
                                           stdin: Data("keyring password\n".utf8), as: nobody)
        #expect(stored.status == 0, "\(stored.stderrLines)")
        _ = try await pam.rig.run(["secret", "add", "typed", "--policy", "user-presence"],
                                  stdin: Data("keyring password\n".utf8), as: nobody)
        let database = try await pam.passwordDatabase("db", user: "nobody", password: "keyring password")
        func stack(_ item: String) throws -> String {
            try pam.stack("handoff-\(item)", [
                "auth requisite \(pam.module) socket=\(pam.socket) authtok-from=\(item)",
                "auth required pam_userdb.so db=\(database) use_first_pass",
            ])
        }
        // A release just made started a reuse session; this release needs a touch of its own.
        let earlier = try await pam.rig.run(["secret", "get", "login"], presenting: ["whorl"], as: nobody)
        #expect(earlier.status == 0, "\(earlier.stderrLines)")
        let handed = try await pam.authenticate(try stack("login"), user: "nobody", presenting: ["whorl"])
        #expect(handed.result == "PAM_SUCCESS", "\(handed)\n\(pam.rig.daemonLog)")
        #expect(handed.prompts == 1, "one touch in all: \(handed)")
        #expect(!handed.messages.contains { $0.hasPrefix("prompt: ") }, "nobody typed a password: \(handed)")

        let once = try pam.stack("once", ["auth requisite \(pam.module) socket=\(pam.socket) authtok-from=login max-tries=1",
                                          "auth required pam_userdb.so db=\(database) use_first_pass"])
        let noMatch = try await pam.authenticate(once, user: "nobody", presenting: ["arch"])
        #expect(noMatch.result == "PAM_MAXTRIES" && noMatch.prompts == 1, "\(noMatch)")
        _ = try await pam.authenticate(try stack("login"), user: "nobody", presenting: ["whorl"])
        // An item a passphrase alone could release is no fingerprint login.
        let loose = try await pam.authenticate(try stack("typed"), user: "nobody", presenting: ["whorl"])
        #expect(loose.result == "PAM_AUTHINFO_UNAVAIL" && loose.prompts == 0, "\(loose)")
        let missing = try await pam.authenticate(try stack("absent"), user: "nobody", presenting: ["whorl"])
        #expect(missing.result == "PAM_AUTHINFO_UNAVAIL", "\(missing)")

        // Root (sudo, login) asks for the user named by PAM, with a plain touch too.
        let plain = try pam.stack("plain", ["auth required \(pam.module) socket=\(pam.socket)"])
        let forNobody = try await pam.authenticate(plain, user: "nobody", presenting: ["whorl"])
        #expect(forNobody.result == "PAM_SUCCESS" && forNobody.prompts == 1, "\(forNobody)")

        // A screen locker runs as the user: it asks for itself (no `user` argument), and may
        // not ask about anyone else.
        let locker = try pam.stack("locker", ["auth required \(pam.module) socket=\(pam.socket)"])
        let own = try await pam.authenticate(locker, user: "nobody", presenting: ["whorl"], as: nobody)
        #expect(own.result == "PAM_SUCCESS", "\(own)\n\(pam.rig.daemonLog)")
        let someoneElse = try await pam.authenticate(locker, user: "root", presenting: ["whorl"], as: nobody)
        #expect(someoneElse.result == "PAM_AUTHINFO_UNAVAIL" && someoneElse.prompts == 0, "\(someoneElse)")
    }

    @Test("a touch releases the login password and pam_gnome_keyring unlocks a real login keyring with it")
    func gnomeKeyring() async throws {
        let pam = try await PAMRig()
        let nobody = DaemonRig.otherUID
        let keyring = try await GnomeKeyringRig(in: pam.rig.home, uid: nobody, password: "keyring password")
        defer { keyring.stopAll() }
        try await pam.rig.start()
        try await pam.rig.initialize(as: nobody)
        for (item, value) in [("login-keyring", "keyring password"), ("stale", "an old password")] {
            let stored = try await pam.rig.run(["secret", "add", item, "--policy", "biometry-any"],
                                               stdin: Data("\(value)\n".utf8), as: nobody)
            #expect(stored.status == 0, "\(stored.stderrLines)")
        }
        let database = try await pam.passwordDatabase("db", user: "nobody", password: "keyring password")
        // The stack in docs/INTEGRATIONS.md, with pam_userdb standing for the password path after it.
        func stack(_ item: String) throws -> String {
            try pam.stack("greeter-\(item)", [
                "auth [success=ok default=2] \(pam.module) socket=\(pam.socket) authtok-from=\(item) max-tries=1",
                "auth optional pam_gnome_keyring.so",
                "auth sufficient pam_permit.so",
                "auth required pam_userdb.so db=\(database)",
            ])
        }
        let session = ["env=XDG_RUNTIME_DIR=\(keyring.runtime)"]
        #expect(try await keyring.loginKeyringLocked() == true)

        // Not this finger: the stack falls through to the password, which is refused here.
        let miss = try await pam.authenticate(try stack("login-keyring"), user: "nobody", presenting: ["arch"],
                                              password: "wrong", options: session)
        #expect(miss.result == "PAM_AUTH_ERR" && miss.messages.contains { $0.hasPrefix("prompt: ") }, "\(miss)")
        #expect(try await keyring.loginKeyringLocked() == true)

        // A password that is not the keyring's: logged in, the keyring stays locked.
        let stale = try await pam.authenticate(try stack("stale"), user: "nobody", presenting: ["whorl"], options: session)
        #expect(stale.result == "PAM_SUCCESS", "\(stale)")
        #expect(try await keyring.loginKeyringLocked() == true, "the keyring opened with a password that is not its own")

        let login = try await pam.authenticate(try stack("login-keyring"), user: "nobody", presenting: ["whorl"],
                                               options: session)
        #expect(login.result == "PAM_SUCCESS" && login.prompts == 1, "\(login)\n\(pam.rig.daemonLog)")
        #expect(!login.messages.contains { $0.hasPrefix("prompt: ") }, "nobody typed a password: \(login)")
        #expect(try await keyring.loginKeyringLocked() == false, "pam_gnome_keyring did not unlock the login keyring")
    }

    @Test("a hostile daemon: malformed, oversized, deeply nested, ambiguous or truncated answers fall back to the password, never crash")
    func hostileDaemon() async throws {
        let pam = try await PAMRig()
        let hello = "{\"id\":0,\"kind\":\"hello\",\"versions\":[1]}\n"
        let nested = String(repeating: "[", count: 50_000) + String(repeating: "]", count: 50_000)
        // A match whose line, newline included, is `total` bytes long.
        func match(total: Int) -> String {
            let head = "{\"kind\":\"result\",\"id\":1,\"result\":{\"match\":true},\"pad\":\""
            return head + String(repeating: "a", count: total - head.count - 3) + "\"}\n"
        }
        let cases: [(String, [UInt8], [String])] = [
            ("not JSON", Array("hello there\n".utf8), []),
            ("another version", Array("{\"id\":0,\"kind\":\"hello\",\"versions\":[2]}\n".utf8), []),
            ("a line over 64 KiB", Array((hello + String(repeating: "a", count: 70_000)).utf8), []),
            ("a line of 64 KiB and its newline", Array((hello + match(total: 65_537)).utf8), []),
            ("nesting 50,000 deep", Array((hello + "{\"kind\":\"event\",\"id\":1,\"event\":\(nested)}\n").utf8), []),
            ("a match of the wrong type", Array((hello + "{\"kind\":\"result\",\"id\":1,\"result\":{\"match\":\"yes\"}}\n").utf8), []),
            ("another request's result", Array((hello + "{\"kind\":\"result\",\"id\":7,\"result\":{\"match\":true}}\n").utf8), []),
            ("another request's lockout", Array((hello + "{\"kind\":\"failure\",\"id\":7,\"error\":{\"code\":\"locked-out\","
                                                 + "\"message\":\"locked\"}}\n").utf8), []),
            ("a bad escape", Array((hello + "{\"kind\":\"result\",\"id\":1,\"result\":{\"match\":true},\"x\":\"\\q\"}\n").utf8), []),
            ("bytes that are not UTF-8", Array((hello + "{\"kind\":\"result\",\"id\":1,\"result\":{\"match\":true},\"x\":\"").utf8)
                + [0xC0, 0xAF, 0xFF] + Array("\"}\n".utf8), []),
            ("a key twice", Array((hello + "{\"kind\":\"result\",\"id\":1,\"result\":{\"match\":false,\"match\":true}}\n").utf8), []),
            ("a key spelled with escapes", Array((hello + "{\"kind\":\"result\",\"id\":1,\"result\":{\"m\\u0061tch\":true}}\n").utf8), []),
            ("a secret too long", Array((hello + "{\"kind\":\"result\",\"id\":1,\"result\":{},\"secret-length\":99999999}\n").utf8),
             ["authtok-from=login"]),
            ("a truncated secret", Array((hello + "{\"kind\":\"result\",\"id\":1,\"result\":{},\"secret-length\":10}\nabc").utf8),
             ["authtok-from=login"]),
            ("silence", Array(hello.utf8), ["timeout=1"]),
        ]
        for (index, (what, script, options)) in cases.enumerated() {
            let path = pam.rig.home.path("impostor-\(index)")
            _ = try ScriptedDaemon(path: path, script: script)
            let stack = try pam.stack("hostile-\(index)", ["auth required \(pam.module) socket=\(path) timeout=5 "
                                                           + options.joined(separator: " ")])
            let outcome = try await pam.authenticate(stack)
            #expect(outcome.result == "PAM_AUTHINFO_UNAVAIL", "\(what): \(outcome)")
        }

        // The same impostor answering well is believed (so the refusals above are the
        // module's judgement): a line of exactly 64 KiB with its newline is taken, and the
        // prompt reaches the conversation without its control characters (C0, DEL, C1; raw
        // or escaped), its other characters intact.
        let path = pam.rig.home.path("impostor-good")
        _ = try ScriptedDaemon(path: path, script: Array((hello
            + "{\"kind\":\"event\",\"id\":1,\"event\":{\"event\":\"finger-needed\",\"message\":"
            + "\"Place your \\u001b[2Jfinger \u{9B}2J\\u009b1m\\u007f on the reader ✋\"}}\n"
            + match(total: 65_536)).utf8))
        let good = try await pam.authenticate(try pam.stack("hostile-good", ["auth required \(pam.module) socket=\(path)"]))
        #expect(good.result == "PAM_SUCCESS", "\(good)")
        #expect(good.messages == ["Place your ?[2Jfinger ?2J?1m? on the reader ✋"], "control characters passed on: \(good)")
    }
}

/// What one `pam-run` printed.
struct PAMOutcome: CustomStringConvertible {
    /// `PAM_SUCCESS`, `PAM_AUTH_ERR`, …
    let result: String
    /// The conversation's lines: text as is, `error: …`, `prompt: …`.
    let messages: [String]
    /// How many times the reader asked for a finger.
    let prompts: Int

    var description: String { "\(result), prompts \(prompts), messages \(messages)" }
}

/// The module and the test program built for this test, stacks in a private directory,
/// and a daemon to ask.
final class PAMRig: Sendable {
    /// A rig whose daemon (with `arguments`) is on the bus of python3-dbusmock's logind,
    /// started, with a vault; stop the logind rig when done.
    static func withLogind(_ arguments: [String] = []) async throws -> (LogindRig, PAMRig) {
        let logind = try await LogindRig()
        do {
            let pam = try await PAMRig()
            pam.rig.daemonEnvironment = logind.environment
            pam.rig.daemonArguments = arguments
            try await pam.rig.start()
            try await pam.rig.initialize()
            return (logind, pam)
        } catch {
            logind.stop()
            throw error
        }
    }

    /// The reasons of the audit records of `event`, oldest first.
    func auditReasons(event: String) async throws -> [String] {
        let audit = try await rig.run(["audit", "show", "--json", "--event", event])
        return ((audit.json?["records"] as? [[String: Any]]) ?? []).compactMap { $0["reason"] as? String }
    }

    let rig: DaemonRig
    /// The built `pam_touchgate.so`.
    let module: String
    let program: String
    let confdir: String

    var socket: String { rig.socketPath }

    init() async throws {
        for (tool, package) in [("/usr/bin/make", "make"), ("/usr/bin/cc", "gcc"), ("/usr/bin/db_load", "db-util"),
                                ("/usr/include/security/pam_appl.h", "libpam0g-dev"), ("/usr/bin/setpriv", "util-linux")] {
            try #require(FileManager.default.fileExists(atPath: tool),
                         "the PAM tests need \(tool): apt-get install \(package) (scripts/setup.sh does)")
        }
        rig = try await DaemonRig()
        // No system bus unless a test brings logind's stand-in: whether the machine running
        // the tests has a remote login session must not decide them.
        rig.daemonEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(rig.home.path("no-system-bus"))"]
        let build = rig.home.path("pam")
        confdir = rig.home.path("pam.d")
        for directory in [build, confdir] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        }
        module = build + "/pam_touchgate.so"
        program = build + "/pam-run"
        let root = Fixtures.packageRoot.path
        let (module, program) = (module, program)
        let made = try await runProgram("/usr/bin/make", ["-C", root, "-B", "pam", "PAMBUILD=\(build)"])
        let compiled = try await runProgram("/usr/bin/cc", ["-Wall", "-Wextra", "-Werror", "-o", program,
                                                            root + "/Tests/PAMPrograms/pam-run.c", "-lpam"])
        try #require(made.status == 0 && FileManager.default.fileExists(atPath: module),
                     "make pam: \(made.stdout)\(made.stderr)")
        try #require(compiled.status == 0, "pam-run: \(compiled.stderr)")
    }

    /// Writes the stack `lines` as service `name`; returns the name.
    func stack(_ name: String, _ lines: [String]) throws -> String {
        try (lines.joined(separator: "\n") + "\n").write(toFile: confdir + "/" + name, atomically: true, encoding: .utf8)
        chmod(confdir + "/" + name, 0o644)
        return name
    }

    /// A pam_userdb database (Berkeley DB, made by db_load) holding `user`'s `password`;
    /// returns the path pam_userdb's `db=` takes (without `.db`).
    func passwordDatabase(_ name: String, user: String, password: String) async throws -> String {
        let base = rig.home.path(name)
        let input = base + ".txt"
        try "\(user)\n\(password)\n".write(toFile: input, atomically: true, encoding: .utf8)
        let loaded = try await runProgram("/usr/bin/db_load", ["-T", "-t", "hash", "-f", input, base + ".db"])
        try #require(loaded.status == 0, "db_load: \(loaded.stderr)")
        return base
    }

    /// Runs pam_authenticate on `service` for `user` (as root, or as `uid`), presenting
    /// `prints` to the reader prompt by prompt and answering a password prompt with `password`.
    func authenticate(_ service: String, user: String = "root", presenting prints: [String] = [],
                      password: String = "", options: [String] = [], as uid: UInt32? = nil) async throws -> PAMOutcome {
        var process = CLIProcess(environment: ["HOME": rig.home.path("client")])
        process.binaryOverride = program
        if let uid { process.wrapper = ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--"] }
        rig.finger.present(prints)
        let finger = rig.finger
        let run = try await process.run([confdir, service, user] + options, stdin: Data((password + "\n").utf8),
                                        timeout: 60) { line, _ in finger.handle(line) }
        let result = run.stdout.split(separator: "\n").first { $0.hasPrefix("result: ") }.map { String($0.dropFirst(8)) }
        return PAMOutcome(result: result ?? "no result (status \(run.status)): \(run.stdout)", messages: run.stderrLines,
                          prompts: run.stderrLines.filter(VirtualImageFinger.isPrompt).count)
    }
}

/// A daemon impostor for the module's hostile-input test: listens on `path` and, to the one
/// client that connects, sends `script` and then reads until the client goes.
final class ScriptedDaemon: @unchecked Sendable {
    // @unchecked Sendable: `listener` is set once in init and only closed by the serving thread.
    private let listener: Int32

    init(path: String, script: [UInt8]) throws {
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw POSIXError(.EADDRINUSE) }
        let serving = listener
        Thread.detachNewThread {
            defer { close(serving) }
            let client = accept(serving, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            _ = script.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var waiting = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            while poll(&waiting, 1, 10_000) > 0, read(client, &buffer, buffer.count) > 0 {}
        }
    }
}
