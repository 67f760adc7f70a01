import Foundation
import Testing
import TouchgateTestSupport

/// `touchgate askpass` under the real ssh-add and ssh-agent: a key's passphrase comes from
/// the vault after a touch, `ssh-add -c` keys are approved by a touch per use, and a
/// signature made through the agent verifies.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SSHAskpassTests {
    static let keyPassphrase = "ssh key passphrase 42"

    /// A vault with whorl enrolled, the key's passphrase stored, an encrypted key and an agent.
    struct Setup {
        let rig: HelperRig
        let agent: BackgroundProgram
        let keyPath: String
        let agentSocket: String

        var sshEnvironment: [String: String] {
            ["SSH_AUTH_SOCK": agentSocket, "SSH_ASKPASS": rig.bin + "/touchgate-askpass", "SSH_ASKPASS_REQUIRE": "force"]
        }

        /// `ssh-add -c` of the key (its passphrase released by the whorl finger): each use
        /// of it is then confirmed through askpass.
        func addConfirmed() async throws {
            let added = try await rig.run("/usr/bin/ssh-add", ["-c", keyPath], extra: sshEnvironment,
                                          stdin: Data(), presenting: ["whorl"])
            try #require(added.status == 0, "\(added.stderrLines)")
        }

        /// `agentEnvironment` is added to the agent's (and so its askpass's) environment.
        static func make(rig: HelperRig, agentEnvironment: [String: String] = [:]) async throws -> Setup {
            for tool in ["/usr/bin/ssh-agent", "/usr/bin/ssh-add", "/usr/bin/ssh-keygen"] {
                try HelperRig.require(tool, package: "openssh-client")
            }
            try await rig.vault.initAndUnlock()
            try await rig.vault.enroll("whorl")
            try await rig.vault.add("ssh-test-key", SSHAskpassTests.keyPassphrase, policy: "biometry-any", fresh: true)
            let keyPath = rig.home.path("id_touchgate_test")
            let made = try await rig.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-C", "touchgate-test",
                                                                 "-N", SSHAskpassTests.keyPassphrase, "-f", keyPath])
            try #require(made.status == 0, "ssh-keygen: \(made.stderrLines)")
            let mapped = try await rig.vault.run(["askpass", "map", keyPath, "ssh-test-key"])
            try #require(mapped.status == 0, "askpass map: \(mapped.stderrLines)")
            // Listed as a table for people, as fields with --json.
            let listed = try await rig.vault.run(["askpass", "list"])
            #expect(listed.stdout.hasPrefix("PROMPT PATTERN") && listed.stdout.contains("\(keyPath)  ssh-test-key"),
                    "\(listed.stdout)")
            let fields = try await rig.vault.run(["askpass", "list", "--json"])
            let mappings = fields.json?["mappings"] as? [[String: Any]]
            #expect(mappings?.count == 1 && mappings?.first?["pattern"] as? String == keyPath
                    && mappings?.first?["item"] as? String == "ssh-test-key", "\(fields.stdout)")
            // The agent runs askpass itself for ssh-add -c keys: it gets the helper's environment.
            let agentSocket = rig.home.path("agent.sock")
            var environment = rig.environment
            environment["SSH_ASKPASS"] = rig.bin + "/touchgate-askpass"
            environment["SSH_ASKPASS_REQUIRE"] = "force"
            // No session bus unless a test gives one: no desktop shows a notification.
            environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
            environment.merge(agentEnvironment) { $1 }
            let agent = try await BackgroundProgram("/usr/bin/ssh-agent", ["-D", "-a", agentSocket], environment: environment,
                                              finger: rig.vault.finger)
            try await waitForSocket(agentSocket)
            return Setup(rig: rig, agent: agent, keyPath: keyPath, agentSocket: agentSocket)
        }

        /// Signs a message through the agent; returns ssh-keygen's result and whether the signature verifies.
        func sign(presenting prints: [String]) async throws -> (CLIResult, Bool) {
            let message = rig.home.path("message-\(UUID().uuidString)")
            try Data("sign me\n".utf8).write(to: URL(fileURLWithPath: message))
            let signed = try await rig.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", keyPath + ".pub", "-n", "file", message],
                                           extra: sshEnvironment, presenting: prints)
            guard signed.status == 0 else { return (signed, false) }
            let checked = try await rig.run("/bin/sh", ["-c", "exec /usr/bin/ssh-keygen -Y check-novalidate -n file -f \"$1\" -s \"$2\" < \"$3\"",
                                                       "sh", keyPath + ".pub", message + ".sig", message])
            return (signed, checked.status == 0 && checked.stdout.contains("Good \"file\" signature"))
        }

        /// The environment of a person's shell on a terminal: the agent's, no session bus.
        var terminalEnvironment: [String: String] {
            var environment = rig.environment.merging(sshEnvironment) { $1 }
            environment["TERM"] = "xterm"
            environment["HOME"] = rig.home.path("")
            environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
            return environment
        }

        /// `ssh-keygen -Y sign` of a new message on a new terminal, as a person types it.
        func signOnTerminal() async throws -> TerminalSession {
            let message = rig.home.path("message-\(UUID().uuidString)")
            try Data("sign me\n".utf8).write(to: URL(fileURLWithPath: message))
            return try await TerminalSession("/usr/bin/ssh-keygen -Y sign -f '\(keyPath).pub' -n file '\(message)'",
                                             directory: rig.home.path(""), environment: terminalEnvironment)
        }
    }

    /// Seconds until `session` shows a line containing `text`; nil after `limit`.
    static func seconds(until session: TerminalSession, shows text: String, limit: TimeInterval = 20) async throws -> TimeInterval? {
        let start = Date()
        guard try await session.waitForLine(timeout: limit, where: { $0.contains(text) }) else { return nil }
        return Date().timeIntervalSince(start)
    }

    @Test("touchgate-askpass and pinentry-touchgate answer --help and --version about themselves, not as a prompt or a session")
    func helperNamesAnswerHelp() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        for (name, command) in [("touchgate-askpass", "askpass"), ("pinentry-touchgate", "pinentry")] {
            let help = try await rig.run(rig.bin + "/" + name, ["--help"], stdin: Data())
            #expect(help.status == 0 && help.stdout.contains("USAGE: touchgate \(command)"),
                    "\(name) --help: \(help.status) \(help.stdout) \(help.stderrLines)")
            let version = try await rig.run(rig.bin + "/" + name, ["--version"], stdin: Data())
            #expect(version.status == 0 && version.stdout.split(separator: "\n").first?.first?.isNumber == true,
                    "\(name) --version: \(version.status) \(version.stdout) \(version.stderrLines)")
        }
        // A real prompt is still a prompt: nothing is mapped to it.
        let prompt = try await rig.run(rig.bin + "/touchgate-askpass", ["Enter passphrase for key '/x':"], stdin: Data())
        #expect(prompt.status == 10, "\(prompt.stderrLines)")
    }

    @Test func sshAddGetsThePassphraseAfterATouchAndTheAgentSigns() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.agent.stop() } }

        // A finger that does not match: askpass refuses, ssh-add adds nothing.
        let refused = try await rig.run("/usr/bin/ssh-add", [setup.keyPath], extra: setup.sshEnvironment,
                                        stdin: Data(), presenting: ["arch"])
        #expect(refused.status != 0, "\(refused.stderrLines)")
        #expect(refused.fingerPrompts == 1, "\(refused.stderrLines)")
        let emptyAgent = try await rig.run("/usr/bin/ssh-add", ["-l"], extra: setup.sshEnvironment)
        #expect(!emptyAgent.stdout.contains("touchgate-test"), "\(emptyAgent.stdout)")

        // The enrolled finger: ssh-add gets the passphrase and the key is in the agent.
        let added = try await rig.run("/usr/bin/ssh-add", [setup.keyPath], extra: setup.sshEnvironment,
                                      stdin: Data(), presenting: ["whorl"])
        #expect(added.status == 0, "\(added.stderrLines)")
        #expect(added.fingerPrompts == 1)
        #expect(added.stderrLines.contains { $0.hasPrefix("Identity added") }, "\(added.stderrLines)")
        #expect(!added.stdout.contains(Self.keyPassphrase) && !added.stderrLines.joined().contains(Self.keyPassphrase))
        let listed = try await rig.run("/usr/bin/ssh-add", ["-l"], extra: setup.sshEnvironment)
        #expect(listed.stdout.contains("touchgate-test"), "\(listed.stdout)")

        // A signature through the agent verifies against the public key.
        let (signed, verifies) = try await setup.sign(presenting: [])
        #expect(signed.status == 0, "\(signed.stderrLines)")
        #expect(verifies)

        // The trail names the program that asked: ssh-add, through touchgate askpass.
        let reads = try await rig.auditRecords(mentioning: "touchgate askpass for pid ")
            .filter { $0["event"] as? String == "item.read" }
        #expect(reads.contains { ($0["outcome"] as? String) == "success" && ($0["reason"] as? String ?? "").contains("/usr/bin/ssh-add") },
                "\(reads)")
        #expect(reads.contains { ($0["outcome"] as? String) == "failure" }, "the refused touch is recorded too: \(reads)")
        await setup.agent.stop()
    }

    @Test func aConfirmKeyNeedsATouchForEachUse() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.agent.stop() } }

        try await setup.addConfirmed()

        // Each use asks the agent's askpass (SSH_ASKPASS_PROMPT=confirm): a matching touch approves.
        let (approved, verifies) = try await setup.sign(presenting: ["whorl"])
        #expect(approved.status == 0, "\(approved.stderrLines)")
        #expect(verifies)
        let (again, _) = try await setup.sign(presenting: ["whorl"])
        #expect(again.status == 0, "a second use is approved by a second touch: \(again.stderrLines)")
        let (refused, _) = try await setup.sign(presenting: ["arch"])
        #expect(refused.status != 0, "a finger that does not match refuses the use: \(refused.stderrLines)")
        #expect(refused.stderrLines.joined().contains("agent refused operation"), "\(refused.stderrLines)")

        // Each decision is an authentication attempt naming ssh-agent.
        let attempts = try await rig.auditRecords(mentioning: "touchgate askpass for pid ")
            .filter { $0["event"] as? String == "auth.attempt" && ($0["reason"] as? String ?? "").contains("ssh-agent") }
        #expect(attempts.filter { $0["outcome"] as? String == "success" }.count == 2, "\(attempts)")
        #expect(attempts.filter { $0["outcome"] as? String == "failure" }.count == 1, "\(attempts)")
        await setup.agent.stop()
    }

    @Test("ssh-agent runs askpass with no terminal: the confirmation is a desktop notification, withdrawn after the touch")
    func aConfirmationWithoutATerminalIsANotification() async throws {
        let notifications = try await NotificationRig()
        defer { notifications.stop() }
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, agentEnvironment: notifications.environment)
        defer { Task { await setup.agent.stop() } }
        try await setup.addConfirmed()
        #expect(notifications.calls("Notify").isEmpty, "ssh-add asks the passphrase with its own standard error")

        let (approved, verifies) = try await setup.sign(presenting: ["whorl"])
        #expect(approved.status == 0 && verifies, "\(approved.stderrLines)")
        let shown = notifications.calls("Notify")
        #expect(shown.count == 1, "\(shown)")
        #expect(shown.first?.contains("Touch the fingerprint reader") == true && shown.first?.contains("Allow use of key touchgate-test?") == true,
                "the notice says what to do and which key: \(shown)")
        let withdrawn = notifications.calls("CloseNotification")
        #expect(withdrawn.count == 1, "withdrawn once the touch was made: \(withdrawn)")

        // A refused finger withdraws it too.
        let (refused, _) = try await setup.sign(presenting: ["arch"])
        #expect(refused.status != 0)
        #expect(notifications.calls("Notify").count == 2 && notifications.calls("CloseNotification").count == 2,
                "\(notifications.calls("Notify"))\n\(notifications.calls("CloseNotification"))")
        await setup.agent.stop()
    }

    @Test("no notification server: ssh-agent's askpass tells the terminal of the ssh-keygen that asked what it waits for, then touched or refused")
    func aConfirmationIsToldOnTheTerminalOfTheCommandThatAsked() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.agent.stop() } }
        try await setup.addConfirmed()
        let fingerprint = try await rig.run("/usr/bin/ssh-keygen", ["-l", "-f", setup.keyPath + ".pub"])
        let sha256 = try #require(fingerprint.stdout.split(separator: " ").first { $0.hasPrefix("SHA256:") }.map(String.init),
                                  "\(fingerprint.stdout)")

        // The enrolled finger: the request names the key (comment and fingerprint) and says
        // to touch the reader, at once; the outcome follows the touch.
        rig.vault.finger.present(["whorl"])
        let signed = try await setup.signOnTerminal()
        let asked = try await Self.seconds(until: signed, shows: "touchgate askpass: Touch the fingerprint reader to approve")
        #expect(asked != nil, "\(signed.output)\n\(setup.agent.errorLines)")
        // Bounds far under the 60 s finger timeout (what a silent wait ended at) and over what a
        // loaded CI machine takes (2 s were overrun there); the speed itself is not timed here.
        let touch = try await Self.seconds(until: signed, shows: " your right index finger")
        #expect(touch.map { $0 < 15 } == true, "the reader's prompt soon after the request: \(signed.output)")
        let outcome = try await Self.seconds(until: signed, shows: "touchgate askpass: touched")
        #expect(outcome.map { $0 < 15 } == true, "the outcome soon after the touch: \(signed.output)")
        #expect(await signed.finish(timeout: 60) == 0, "\(signed.output)\n\(setup.agent.errorLines)")
        let lines = signed.output.split(separator: "\n").filter { $0.hasPrefix("touchgate askpass: ") }
        #expect(lines.first?.contains("Allow use of key touchgate-test?") == true && lines.first?.contains(sha256) == true,
                "which key, by comment and fingerprint: \(lines)")
        #expect(lines.last?.hasPrefix("touchgate askpass: touched") == true, "the outcome comes last: \(lines)")

        // A finger that is not enrolled: refused, said there too, and the signature is not made.
        rig.vault.finger.present(["arch"])
        let refused = try await setup.signOnTerminal()
        let refusal = try await Self.seconds(until: refused, shows: "touchgate askpass: refused: the finger did not match")
        #expect(refusal != nil, "\(refused.output)\n\(setup.agent.errorLines)")
        #expect(await refused.finish(timeout: 60) != 0, "\(refused.output)")
        #expect(refused.output.contains("agent refused operation"), "\(refused.output)")
        #expect(!refused.output.contains("touchgate askpass: touched"), "\(refused.output)")
        await setup.agent.stop()
    }

    @Test("ssh-add on a terminal with its errors elsewhere: askpass tells the terminal ssh-add reads from what it waits for and how it ended")
    func aPassphrasePromptIsToldOnTheTerminalOfSshAdd() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.agent.stop() } }
        // askpass's standard error (ssh-add's) is no terminal: the finger cannot read the prompt
        // there, so it touches once the terminal shows it.
        rig.vault.finger.present(["whorl"])
        let adding = try await TerminalSession("/usr/bin/ssh-add '\(setup.keyPath)' 2>/dev/null", directory: rig.home.path(""),
                                               environment: setup.terminalEnvironment)
        #expect(try await adding.waitForLine(timeout: 20) { $0.contains("touchgate askpass: ") && $0.contains(" your right index finger") },
                "\(adding.output)")
        rig.vault.finger.presentNext()
        #expect(await adding.finish(timeout: 60) == 0, "\(adding.output)\n\(setup.agent.errorLines)")
        #expect(adding.output.contains("touchgate askpass: allowed: the key's passphrase was given"), "\(adding.output)")
        #expect(!adding.output.contains(Self.keyPassphrase), "\(adding.output)")
        let listed = try await rig.run("/usr/bin/ssh-add", ["-l"], extra: setup.sshEnvironment)
        #expect(listed.stdout.contains("touchgate-test"), "\(listed.stdout)")
        await setup.agent.stop()
    }

    @Test("nobody touches: the terminal of the command that asked says the wait timed out")
    func anUntouchedConfirmationTimesOutOnTheTerminal() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, agentEnvironment: ["TOUCHGATE_FINGER_TIMEOUT": "2"])
        defer { Task { await setup.agent.stop() } }
        try await setup.addConfirmed()
        rig.vault.finger.present([])
        let waited = try await setup.signOnTerminal()
        #expect(try await waited.waitForLine(timeout: 20) { $0.contains("touchgate askpass: Touch the fingerprint reader") },
                "\(waited.output)")
        let ended = try await Self.seconds(until: waited, shows: "touchgate askpass: timed out: no finger")
        #expect(ended.map { $0 < 20 } == true, "said when the 2 s wait ends: \(waited.output)\n\(setup.agent.errorLines)")
        #expect(await waited.finish(timeout: 30) != 0, "\(waited.output)")
        await setup.agent.stop()
    }

    @Test("two clients of ssh-agent on two terminals: the request could be either's, so askpass writes to neither; the touch still decides")
    func aConfirmationIsToldOnNoTerminalWhenTheRequesterCannotBeTold() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.agent.stop() } }
        try await setup.addConfirmed()
        // ssh-add connects to the agent, then asks for the key's passphrase on its terminal,
        // holding the connection while nobody types.
        var idleEnvironment = setup.terminalEnvironment
        idleEnvironment["SSH_ASKPASS_REQUIRE"] = "never"
        let idle = try await TerminalSession("/usr/bin/ssh-add '\(setup.keyPath)'", directory: rig.home.path(""),
                                             environment: idleEnvironment)
        #expect(try await idle.waitForLine(timeout: 20) { $0.contains("Enter passphrase") }, "\(idle.output)")

        rig.vault.finger.present(["whorl"])
        let signed = try await setup.signOnTerminal()
        #expect(await signed.finish(timeout: 60) == 0, "the touch still approves: \(signed.output)\n\(setup.agent.errorLines)")
        #expect(setup.agent.errorLines.contains { $0.contains("Allow use of key touchgate-test?") }, "\(setup.agent.errorLines)")
        #expect(!signed.output.contains("touchgate askpass:") && !idle.output.contains("touchgate askpass:"),
                "\(signed.output)\n---\n\(idle.output)")
        idle.type("\u{03}")
        _ = await idle.finish(timeout: 10)

        // With the idle client gone, the requester is told again.
        rig.vault.finger.present(["whorl"])
        let alone = try await setup.signOnTerminal()
        #expect(await alone.finish(timeout: 60) == 0, "\(alone.output)")
        #expect(alone.output.contains("touchgate askpass: touched"), "\(alone.output)")
        await setup.agent.stop()
    }

    @Test func askpassThroughTheDaemonNamesSshAddAfterTheClientProcess() async throws {
        for tool in ["/usr/bin/ssh-agent", "/usr/bin/ssh-add", "/usr/bin/ssh-keygen"] {
            try HelperRig.require(tool, package: "openssh-client")
        }
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let stored = try await rig.run(["secret", "add", "ssh-key", "--policy", "biometry-any", "--fresh"],
                                       stdin: Data(Self.keyPassphrase.utf8))
        try #require(stored.status == 0, "\(stored.stderrLines)")
        let keyPath = rig.home.path("id_daemon_test")
        var client = rig.client()
        let askpass = rig.binDirectory + "/touchgate-askpass"
        try FileManager.default.createSymbolicLink(atPath: askpass, withDestinationPath: rig.binDirectory + "/touchgate")
        let mapped = try await rig.run(["askpass", "map", keyPath, "ssh-key"])
        try #require(mapped.status == 0, "\(mapped.stderrLines)")

        client.binaryOverride = "/usr/bin/ssh-keygen"
        let made = try await client.run(["-q", "-t", "ed25519", "-C", "daemon-test", "-N", Self.keyPassphrase, "-f", keyPath])
        try #require(made.status == 0, "\(made.stderrLines)")
        let agentSocket = rig.home.path("agent.sock")
        let agent = try await BackgroundProgram("/usr/bin/ssh-agent", ["-D", "-a", agentSocket],
                                          environment: client.environment.merging(["PATH": "/usr/bin:/bin"]) { $1 },
                                          finger: nil)
        try await waitForSocket(agentSocket)
        client.environment.merge(["SSH_AUTH_SOCK": agentSocket, "SSH_ASKPASS": askpass, "SSH_ASKPASS_REQUIRE": "force"]) { $1 }
        client.binaryOverride = "/usr/bin/ssh-add"
        rig.finger.present(["whorl"])
        let finger = rig.finger
        let added = try await client.run([keyPath], stdin: Data()) { line, _ in finger.handle(line) }
        #expect(added.status == 0, "\(added.stderrLines)\n\(rig.daemonLog)")
        #expect(added.stderrLines.contains { $0.hasPrefix("Identity added") }, "\(added.stderrLines)")
        #expect(finger.prompts == 1)

        // touchgated's record names the client process it identified, then the program the helper acts for.
        let shown = try await rig.run(["audit", "show", "--json", "--event", "item.read"])
        let reads = (shown.json?["records"] as? [[String: Any]]) ?? []
        let reason = try #require(reads.last?["reason"] as? String, "\(shown.stdout)")
        // (The daemon's user may not read a root client's /proc/PID/exe: then it names the process by comm.)
        #expect(reason.contains("(via pid ") && reason.contains(", touchgate askpass for pid "), "\(reason)")
        #expect(reason.contains("/usr/bin/ssh-add"), "\(reason)")
        await agent.stop()
        rig.stop()
    }
}
