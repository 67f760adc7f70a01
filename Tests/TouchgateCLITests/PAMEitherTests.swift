import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `pam_touchgate.so mode=either`: the password prompt and the touch at once, through
/// pamtester (the real program, with libpam_misc's terminal conversation, as su and login
/// use) on a pseudo-terminal. pamtester reads its stacks from /etc/pam.d only, so it runs
/// in a mount namespace of its own where the test's stack directory is bind-mounted there.
/// The password module below is pam_userdb with `try_first_pass`, as pam_unix is in
/// Debian's pam-auth-update profile when another module comes first.
@Suite("PAM module, finger or password", .serialized, .timeLimit(.minutes(5)))
struct PAMEitherTests {
    static let password = "a login password"

    @Test("a typed password wins and breaks the touch off; a touch wins and ends the prompt, discarding what was typed")
    func fingerOrPassword() async throws {
        let (pam, stack) = try await Self.rig()

        // The password first: pam_userdb checks what was typed, and the daemon's touch ends.
        let typed = try await Self.pamtester(pam, stack)
        #expect(try await typed.waitForLine(timeout: 20) { $0.contains("Password or touch the reader:") }, "\(typed.output)")
        typed.type(Self.password + "\n")
        #expect(await typed.finish(timeout: 30) == 0, "\(typed.output)\n\(pam.rig.daemonLog)")
        #expect(typed.output.contains("successfully authenticated"), "\(typed.output)")
        #expect(typed.output.components(separatedBy: "Password").count == 2,
                "one prompt, no second one from the password module: \(typed.output)")
        // The reader was let go: a plain touch right after asks once and matches.
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket) timeout=20"])
        let after = try await pam.authenticate(touch, presenting: ["whorl"])
        #expect(after.result == "PAM_SUCCESS" && after.prompts == 1, "\(after)\n\(pam.rig.daemonLog)")

        // The finger first, with a wrong password half typed: the prompt ends by itself,
        // and what was typed is no password to anyone.
        let touched = try await Self.pamtester(pam, stack)
        #expect(try await touched.waitForLine(timeout: 20) { $0.contains("Password or touch the reader:") }, "\(touched.output)")
        touched.type("not the passw")
        try await Task.sleep(for: .milliseconds(300))
        Self.touch(pam, "whorl")
        #expect(await touched.finish(timeout: 30) == 0, "the touch ended the prompt: \(touched.output)\n\(pam.rig.daemonLog)")
        #expect(touched.output.contains("successfully authenticated"), "\(touched.output)")
        let reasons = try await pam.auditReasons(event: "auth.attempt")
        #expect(reasons.last?.contains("pamtester") == true, "the touch is audited, naming pamtester: \(reasons)")
    }

    @Test("a wrong finger is reported under the prompt and the password still works; a wrong password fails")
    func wrongFingerThenPassword() async throws {
        let (pam, stack) = try await Self.rig()
        let session = try await Self.pamtester(pam, stack)
        #expect(try await session.waitForLine(timeout: 20) { $0.contains("Password or touch the reader:") }, "\(session.output)")
        Self.touch(pam, "arch")
        #expect(try await session.waitForLine(timeout: 20) { $0.contains("Fingerprint: no match (2 more before a lockout).") },
                "\(session.output)\n\(pam.rig.daemonLog)")
        session.type(Self.password + "\n")
        #expect(await session.finish(timeout: 30) == 0, "\(session.output)")
        #expect(session.output.contains("successfully authenticated"), "\(session.output)")

        let wrong = try await Self.pamtester(pam, stack)
        #expect(try await wrong.waitForLine(timeout: 20) { $0.contains("Password or touch the reader:") }, "\(wrong.output)")
        wrong.type("not the password\n")
        #expect(await wrong.finish(timeout: 30) != 0, "\(wrong.output)")
        #expect(wrong.output.contains("Authentication failure") && !wrong.output.contains("successfully authenticated"),
                "\(wrong.output)")
    }

    @Test("the password is never held by the reader: with the reader busy, or no daemon, it is asked for at once")
    func passwordNeverWaitsForTheReader() async throws {
        let (pam, stack) = try await Self.rig()
        // Another touch holds the reader for 8 s (nobody touches it).
        let slow = try pam.stack("slow", ["auth required \(pam.module) socket=\(pam.socket) timeout=8"])
        let holder = Task { try await pam.authenticate(slow, presenting: []) }
        try await Task.sleep(for: .seconds(1))
        let started = Date()
        let busy = try await Self.pamtester(pam, stack)
        #expect(try await busy.waitForLine(timeout: 20) { $0.contains("Password") }, "\(busy.output)")
        #expect(Date().timeIntervalSince(started) < 5, "the prompt waited for the reader: \(busy.output)")
        busy.type(Self.password + "\n")
        #expect(await busy.finish(timeout: 30) == 0, "\(busy.output)\n\(pam.rig.daemonLog)")
        #expect(try await holder.value.result == "PAM_AUTHINFO_UNAVAIL", "the other touch timed out as it would have")

        // No daemon: no prompt of ours, the password module asks as usual.
        pam.rig.stop()
        let alone = try await Self.pamtester(pam, stack)
        #expect(try await alone.waitForLine(timeout: 20) { $0.contains("Password:") }, "\(alone.output)")
        #expect(!alone.output.contains("touch the reader"), "\(alone.output)")
        alone.type(Self.password + "\n")
        #expect(await alone.finish(timeout: 30) == 0, "\(alone.output)")
    }

    @Test("a daemon that accepts and never greets holds neither the prompt nor the typed password")
    func silentDaemonHoldsNothing() async throws {
        let (pam, _) = try await Self.rig()
        let silent = pam.rig.home.path("silent.socket")
        let impostor = try ScriptedDaemon(path: silent, script: [])
        _ = impostor
        let database = try await pam.passwordDatabase("silent-logins", user: "root", password: Self.password)
        let stack = try pam.stack("either-silent", [
            "auth [success=done default=ignore] \(pam.module) mode=either socket=\(silent) timeout=20",
            "auth required pam_userdb.so db=\(database) try_first_pass",
        ])
        let session = try await Self.pamtester(pam, stack)
        #expect(try await session.waitForLine(timeout: 10) { $0.contains("Password") }, "\(session.output)")
        let typed = Date()
        session.type(Self.password + "\n")
        #expect(await session.finish(timeout: 30) == 0, "\(session.output)")
        #expect(Date().timeIntervalSince(typed) < 5, "the typed password waited for the silent daemon")
        #expect(session.output.contains("successfully authenticated"), "\(session.output)")
    }

    @Test("sudo, with its own terminal conversation: a touch ends sudo's password prompt, and a typed password works")
    func sudo() async throws {
        try HelperRig.require("/usr/bin/sudo", package: "sudo")
        let (pam, _) = try await Self.rig()
        // sudo, run by nobody, asks for nobody's own password or finger.
        let user = DaemonRig.otherUID
        try await pam.rig.initialize(as: user)
        let database = try await pam.passwordDatabase("nobody", user: "nobody", password: Self.password)
        _ = try pam.stack("sudo", [
            "auth [success=done default=ignore] \(pam.module) mode=either socket=\(pam.socket) timeout=20",
            "auth required pam_userdb.so db=\(database) try_first_pass",
            "account required pam_permit.so",
            "session required pam_permit.so",
        ])
        let sudoers = pam.rig.home.path("sudoers")
        try "Defaults lecture=never\nnobody ALL=(ALL:ALL) ALL\n".write(toFile: sudoers, atomically: true, encoding: .utf8)
        chmod(sudoers, 0o440)
        func run() async throws -> TerminalSession {
            let command = "exec unshare --mount --propagation private /bin/sh -c "
                + "'mount --bind \(pam.confdir) /etc/pam.d && mount --bind \(sudoers) /etc/sudoers && "
                + "exec setpriv --reuid=\(user) --regid=\(user) --clear-groups -- sudo -k -- /bin/echo sudo ran'"
            return try await TerminalSession(command, directory: "/", environment: [
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/", "TERM": "xterm",
            ])
        }
        let touched = try await run()
        #expect(try await touched.waitForLine(timeout: 20) { $0.contains("Password or touch the reader:") }, "\(touched.output)")
        Self.touch(pam, "whorl")
        #expect(await touched.finish(timeout: 30) == 0, "\(touched.output)\n\(pam.rig.daemonLog)")
        #expect(touched.output.contains("sudo ran") && !touched.output.contains("Sorry"), "\(touched.output)")

        let typed = try await run()
        #expect(try await typed.waitForLine(timeout: 20) { $0.contains("Password or touch the reader:") }, "\(typed.output)")
        typed.type(Self.password + "\n")
        #expect(await typed.finish(timeout: 30) == 0, "\(typed.output)\n\(pam.rig.daemonLog)")
        #expect(typed.output.contains("sudo ran"), "\(typed.output)")

        // sudo authenticates with PAM_SILENT: a wrong finger is still said under its prompt,
        // the prompt is shown again, and the password still works.
        let wrong = try await run()
        #expect(try await wrong.waitForLine(timeout: 20) { $0.contains("Password or touch the reader:") }, "\(wrong.output)")
        Self.touch(pam, "arch")
        #expect(try await wrong.waitForLine(timeout: 20) { $0.contains("Fingerprint: no match") }, "\(wrong.output)")
        wrong.type(Self.password + "\n")
        #expect(await wrong.finish(timeout: 30) == 0, "\(wrong.output)\n\(pam.rig.daemonLog)")
        #expect(wrong.output.contains("sudo ran"), "\(wrong.output)")
    }

    @Test("a greeter's conversation, with no terminal: the password works as typed; a touch counts when Enter is pressed")
    func greeterConversation() async throws {
        let (pam, stack) = try await Self.rig()
        final class Lines: @unchecked Sendable {
            // @unchecked Sendable: `seen` is touched under `lock` only.
            private let lock = NSLock()
            private var seen: [String] = []
            func add(_ line: String) { lock.withLock { seen.append(line) } }
            var all: [String] { lock.withLock { seen } }
            func wait(for text: String) async throws -> Bool {
                for _ in 0..<400 {
                    if all.contains(where: { $0.contains(text) }) { return true }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return false
            }
        }
        let started = Lines()
        // However the test ends, no pam-run is left waiting on its input (the test process
        // would wait for it forever).
        defer { for pid in started.all.compactMap(pid_t.init) { kill(pid, SIGKILL) } }
        func greeter() async throws -> (BackgroundProcess, Lines) {
            let lines = Lines()
            let process = try await BackgroundProcess.start(
                pam.program, [pam.confdir, stack, "root", "conv=wait"], environment: ["HOME": pam.rig.home.path("client")],
                holdingInputOpen: true, output: .lines { lines.add($0) }, error: .lines { lines.add($0) })
            started.add(String(process.processIdentifier))
            return (process, lines)
        }

        let (typing, typed) = try await greeter()
        #expect(try await typed.wait(for: "prompt: Password or touch the reader:"), "\(typed.all)")
        try typing.write(Self.password + "\n")
        #expect(await Self.ended(typing) == 0)
        #expect(typed.all.contains("result: PAM_SUCCESS"), "pam_userdb took the typed password: \(typed.all)")

        let (touching, touched) = try await greeter()
        #expect(try await touched.wait(for: "prompt: Password or touch the reader:"), "\(touched.all)")
        Self.touch(pam, "whorl")
        // No terminal to put an Enter into: the prompt stays up until the person presses it.
        // Enter counts if it comes within 5 s after the match, or up to 3 s before it (the
        // module waits that long for a touch in progress): pressed 4.5 s after the touch, it
        // takes any match from the touch to 7.5 s after it. A fixed 2 s took only matches
        // within 5 s, which a loaded two-core machine missed in 3 of 6 whole runs.
        try await Task.sleep(for: .seconds(4.5))
        #expect(touching.isRunning && !touched.all.contains("answered"), "\(touched.all)")
        try touching.write("\n")
        #expect(await Self.ended(touching) == 0)
        #expect(touched.all.contains("result: PAM_SUCCESS"), "the touch counted: \(touched.all)\n\(pam.rig.daemonLog)")
        let reasons = try await pam.auditReasons(event: "auth.attempt")
        #expect(reasons.last?.contains("pam-run") == true, "\(reasons)")

        // A match is not left for whoever comes to the keyboard later: Enter pressed more
        // than five seconds after the touch counts for nothing.
        let (late, lateLines) = try await greeter()
        #expect(try await lateLines.wait(for: "prompt: Password or touch the reader:"), "\(lateLines.all)")
        let attempts = try await pam.auditReasons(event: "auth.attempt").count
        Self.touch(pam, "whorl")
        // The match is in the trail once the daemon made it: six seconds after that, Enter.
        for _ in 0..<200 where try await pam.auditReasons(event: "auth.attempt").count == attempts {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(6))
        try late.write("\n")
        // Nothing typed: pam_userdb asks for itself, and gets no password either.
        #expect(try await lateLines.wait(for: "prompt: Password:"), "\(lateLines.all)")
        try late.write("\n")
        #expect(await Self.ended(late) == 0)
        #expect(!lateLines.all.contains("result: PAM_SUCCESS") && lateLines.all.contains { $0.hasPrefix("result: ") },
                "\(lateLines.all)")
        // The trail does not leave that match looking like a login: the module told the daemon
        // it was not used, and the record says so, after the match's own.
        let recorded = try await pam.auditReasons(event: "auth.attempt")
        #expect(recorded.last?.contains("a fingerprint match was not used: the password prompt ended") == true
                && recorded.last?.contains("pam-run") == true, "\(recorded.suffix(2))")
    }

    /// `process`'s exit status, or nil after 30 s, when it is killed: a pam-run left
    /// waiting on its standard input would keep the test process from ever exiting.
    static func ended(_ process: BackgroundProcess) async -> Int32? {
        for _ in 0..<600 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(50))
        }
        guard !process.isRunning else {
            await process.terminate()
            return nil
        }
        return await process.ended()
    }

    /// A daemon with root's whorl enrolled, and the stack `either` in the rig's directory.
    static func rig() async throws -> (PAMRig, String) {
        try HelperRig.require("/usr/bin/pamtester", package: "pamtester")
        try HelperRig.require("/usr/bin/unshare", package: "util-linux")
        try DaemonAttackTests.requireRoot()
        let pam = try await PAMRig()
        try await pam.rig.start()
        try await pam.rig.initialize()
        let database = try await pam.passwordDatabase("logins", user: "root", password: password)
        let stack = try pam.stack("either", [
            "auth [success=done default=ignore] \(pam.module) mode=either socket=\(pam.socket) timeout=20",
            "auth required pam_userdb.so db=\(database) try_first_pass",
        ])
        return (pam, stack)
    }

    /// `pamtester SERVICE root authenticate` on a new terminal, with the rig's stacks as /etc/pam.d.
    static func pamtester(_ pam: PAMRig, _ service: String) async throws -> TerminalSession {
        let command = "exec unshare --mount --propagation private /bin/sh -c "
            + "'mount --bind \(pam.confdir) /etc/pam.d && exec pamtester -v \(service) root authenticate'"
        return try await TerminalSession(command, directory: pam.rig.home.path("client"), environment: [
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": pam.rig.home.path("client"), "TERM": "xterm",
        ])
    }

    /// Puts `print` on the daemon's virtual reader.
    static func touch(_ pam: PAMRig, _ print: String) {
        pam.rig.finger.present([print])
        pam.rig.finger.handle("Place your finger")
    }
}
