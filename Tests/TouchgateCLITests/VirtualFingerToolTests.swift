import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `virtual-finger` runs its command as a shell runs a foreground job: on the terminal's
/// foreground process group (Ctrl-C reaches it), with every descriptor it was given, and
/// with SIGTERM forwarded; its exit status is the command's.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct VirtualFingerToolTests {
    static let value = "released-only-by-a-touch"

    /// A vault with whorl enrolled and `demo` stored under `biometry-any --fresh`.
    func vaultWithSecret() async throws -> VaultRig {
        let vault = try VaultRig()
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("demo", Self.value, policy: "biometry-any", fresh: true)
        return vault
    }

    /// `command` on a new terminal, in the vault's HOME, with the vault's environment and
    /// the build's products first on PATH.
    func onTerminal(_ vault: VaultRig, _ command: String) async throws -> TerminalSession {
        var environment = vault.rig.process.environment
        let products = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().path
        environment["PATH"] = products + ":/usr/local/bin:/usr/bin:/bin"
        return try await TerminalSession(command, directory: vault.home.url.path, environment: environment)
    }

    @Test func ctrlCAtTheFingerWaitEndsTouchgateWith130AndReleasesNothing() async throws {
        let vault = try await vaultWithSecret()
        defer { vault.home.remove() }
        let session = try await onTerminal(vault, #"virtual-finger --print none -- touchgate secret get demo > released; echo "status $?""#)
        let waiting = try await session.waitForLine(where: VirtualImageFinger.isPrompt)
        try #require(waiting, "no finger prompt:\n\(session.output)")
        session.type("\u{03}")
        let status = await session.finish(timeout: 30)
        #expect(status == 0, "bash went on after the command:\n\(session.output)")
        #expect(session.output.contains("status 130"), "\(session.output)")
        #expect(try String(contentsOfFile: vault.home.path("released"), encoding: .utf8).isEmpty)
        #expect(try await vault.lockout()["consecutive-failures"] as? Int == 0, "a cancel is not a failed attempt")
    }

    @Test func sigtermIsForwardedAndTheCommandsStatusReturned() async throws {
        let vault = try await vaultWithSecret()
        defer { vault.home.remove() }
        // exec: virtual-finger takes the shell's process id, written to `pid` first.
        let session = try await onTerminal(vault, "echo $$ > pid; exec virtual-finger --print none -- touchgate secret get demo > released")
        let waiting = try await session.waitForLine(where: VirtualImageFinger.isPrompt)
        try #require(waiting, "no finger prompt:\n\(session.output)")
        let pid = try #require(pid_t(try String(contentsOfFile: vault.home.path("pid"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        kill(pid, SIGTERM)
        let status = await session.finish(timeout: 30)
        #expect(status == 130, "touchgate cancels on SIGTERM (143 would mean virtual-finger died of it):\n\(session.output)")
        #expect(try String(contentsOfFile: vault.home.path("released"), encoding: .utf8).isEmpty)
    }

    @Test func descriptorsFromTheShellPassThrough() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let created = try await vault.withPassphrase(["init", "--kdf", "minimum"])
        try #require(created.status == 0, "init: \(created.stderrLines)")
        _ = try await vault.run(["lock"])
        try Data((VaultRig.passphrase + "\n").utf8).write(to: URL(fileURLWithPath: vault.home.path("passphrase")))

        let session = try await onTerminal(vault, "virtual-finger -- touchgate unlock --passphrase-fd 3 3<passphrase")
        let status = await session.finish(timeout: 60)
        #expect(status == 0, "\(session.output)")
        #expect(session.output.contains("Unlocked."))
        #expect(try await vault.status()["locked"] as? Bool == false)
    }

    @Test func aCommandThatIsMissingEndsWith127() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let session = try await onTerminal(vault, "virtual-finger -- no-such-command-here")
        let status = await session.finish(timeout: 30)
        #expect(status == 127, "\(session.output)")
        #expect(session.output.contains("cannot run no-such-command-here"))
    }

    @Test("--watch plays 20 touches in a row through the personal agent, which keeps the reader open between requests")
    func watchPlaysThePersonalAgentsReader() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        try await rig.vault.enroll("whorl")
        let socket = rig.home.path("agent/ssh")
        try FileManager.default.createDirectory(atPath: rig.home.path("agent"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        // Nobody but the watcher answers the agent's reader; a touch it misses fails in 15 s.
        let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json", "--socket", socket],
                                                environment: rig.environment.merging(["TOUCHGATE_FINGER_TIMEOUT": "15"]) { $1 },
                                                finger: nil)
        try await waitForSocket(socket)
        let products = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().path
        let log = rig.home.path("virtual-finger.log")
        let watcher = try await BackgroundProcess.start(
            products + "/virtual-finger", ["--watch", "--socket", rig.vault.finger.socketPath, "--print", "whorl"],
            environment: ["PATH": "/usr/bin:/bin"], output: .file(log), error: .file(log))
        try await Task.sleep(for: .milliseconds(300))
        var outcomes: [Int32] = []
        for _ in 0..<20 {
            let verified = try await rig.run(rig.bin + "/touchgate", ["verify", "--json"],
                                             extra: ["TOUCHGATE_SOCKET": rig.home.path("agent/socket")])
            outcomes.append(verified.status)
            if verified.status != 0 { break }
        }
        let alive = watcher.isRunning
        await watcher.terminate(signal: SIGTERM)
        await agent.stop()
        let played = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(outcomes == Array(repeating: 0, count: 20), "verify exit statuses: \(outcomes)\n\(played)")
        #expect(alive, "virtual-finger --watch died: \(played)")
    }

    @Test("--watch plays the finger on the daemon's reader: a PAM touch and verify through touchgated, a wrong print refused")
    func watchPlaysTheDaemonsReader() async throws {
        let pam = try await PAMRig()
        try await pam.rig.start()
        try await pam.rig.initialize()
        let products = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().path
        func watcher(_ print: String) async throws -> (BackgroundProcess, String) {
            let log = pam.rig.home.path("virtual-finger-\(print).log")
            let process = try await BackgroundProcess.start(
                products + "/virtual-finger", ["--watch", "--socket", pam.rig.finger.socketPath, "--print", print],
                environment: ["PATH": "/usr/bin:/bin"], output: .file(log), error: .file(log))
            try await Task.sleep(for: .milliseconds(300))
            return (process, log)
        }
        // The test's own finger presents nothing: only the watcher can answer.
        let touch = try pam.stack("touch", ["auth required \(pam.module) socket=\(pam.socket) timeout=20"])
        let (whorl, log) = try await watcher("whorl")
        let outcome = try await pam.authenticate(touch)
        let verified = try await pam.rig.run(["verify", "--json"])
        await whorl.terminate(signal: SIGTERM)
        let played = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(outcome.result == "PAM_SUCCESS" && outcome.prompts == 1, "\(outcome)\n\(played)\n\(pam.rig.daemonLog)")
        #expect(verified.status == 0 && verified.json?["match"] as? Bool == true, "\(verified.stdout)\(verified.stderrLines)")
        // At least one print per wait: libfprint may report a further wait within one
        // operation (seen once in a loaded CI run), and the watcher answers each.
        #expect(played.components(separatedBy: "presented whorl").count >= 3, "a print per wait: \(played)")

        let (arch, _) = try await watcher("arch")
        let refused = try await pam.rig.run(["verify", "--json"])
        await arch.terminate(signal: SIGTERM)
        #expect(refused.status == 1 && refused.json?["match"] as? Bool == false, "\(refused.stdout)")
    }
}
