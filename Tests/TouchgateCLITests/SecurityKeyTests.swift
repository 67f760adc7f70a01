import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// libtouchgate-sk.so, built by `make sk`, under the real OpenSSH programs: ssh-keygen makes
/// an `ed25519-sk` key whose private half is sealed in the vault, and an sshd that demands
/// user verification (`verify-required`) lets ssh in only when an enrolled finger matched
/// for that very signature.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SecurityKeyTests {
    /// A vault with whorl enrolled, the agent serving it, and the provider built.
    struct Setup {
        let rig: HelperRig
        let agent: BackgroundProgram
        let provider: String
        let environment: [String: String]

        static func make(rig: HelperRig) async throws -> Setup {
            for (tool, package) in [("/usr/bin/ssh-keygen", "openssh-client"), ("/usr/bin/ssh", "openssh-client"),
                                    ("/usr/lib/openssh/ssh-sk-helper", "openssh-client"), ("/usr/bin/make", "make"),
                                    ("/usr/bin/cc", "gcc")] {
                try HelperRig.require(tool, package: package)
            }
            let build = rig.home.path("sk")
            let made = try await runProgram("/usr/bin/make", ["-C", Fixtures.packageRoot.path, "-B", "sk", "SKBUILD=\(build)"])
            let provider = build + "/libtouchgate-sk.so"
            try #require(made.status == 0 && FileManager.default.fileExists(atPath: provider), "make sk: \(made.stdout)\(made.stderr)")
            try await rig.vault.initAndUnlock()
            try await rig.vault.enroll("whorl")
            let socket = rig.home.path("agent.sock")
            let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json", "--socket", socket],
                                                    environment: rig.environment, finger: rig.vault.finger)
            try await waitForSocket(socket)
            return Setup(rig: rig, agent: agent, provider: provider, environment: ["TOUCHGATE_AGENT_SOCKET": socket])
        }

        /// `ssh-keygen -t ed25519-sk -w PROVIDER` with `options`; the public key line.
        func keygen(_ file: String, _ options: [String]) async throws -> String {
            let made = try await rig.run("/usr/bin/ssh-keygen",
                                         ["-q", "-t", "ed25519-sk", "-w", provider, "-N", "", "-f", file]
                                             + options.flatMap { ["-O", $0] },
                                         extra: environment, stdin: Data("\n".utf8))
            try #require(made.status == 0, "ssh-keygen: \(made.stdout) \(made.stderrLines)")
            return try String(contentsOfFile: file + ".pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// ssh to `server` with the security key `identity`, through the provider.
        func login(_ server: SSHAgentTests.Server, identity: String, presenting prints: [String]) async throws -> CLIResult {
            try await rig.run("/usr/bin/ssh", ["-o", "SecurityKeyProvider=\(provider)"]
                                  + server.sshArguments(identity: identity, "echo logged-in"),
                              extra: environment, presenting: prints)
        }
    }

    @Test func aVerifyRequiredServerLetsInOnlyAfterAMatch() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        let identity = rig.home.path("id_ed25519_sk")
        let publicKey = try await setup.keygen(identity, ["verify-required", "user=laptop"])
        #expect(publicKey.hasPrefix("sk-ssh-ed25519@openssh.com AAAA"), "\(publicKey)")

        // The vault lists the key with the same public half; the agent does not offer it.
        let listed = try await rig.run(rig.bin + "/touchgate", ["ssh", "list", "--json"],
                                       extra: ["TOUCHGATE_SOCKET": rig.home.path("socket")])
        let keys = listed.json?["keys"] as? [[String: Any]] ?? []
        let blob = publicKey.split(separator: " ")[1]
        #expect(keys.contains { ($0["authorized-key"] as? String ?? "").contains(blob) && $0["name"] as? String == "laptop" },
                "touchgate ssh list: \(listed.stdout)")
        let offered = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: ["SSH_AUTH_SOCK": setup.environment["TOUCHGATE_AGENT_SOCKET"]!])
        #expect(!offered.stdout.contains(String(blob)), "the agent offers only the keys it signs with itself")

        let server = try await SSHAgentTests.Server.start(in: rig.home, authorizing: "verify-required " + publicKey)
        defer { Task { await server.process.stop() } }
        let refused = try await setup.login(server, identity: identity, presenting: ["arch"])
        #expect(refused.status != 0 && !refused.stdout.contains("logged-in"), "a stranger's finger: \(refused.stderrLines)")
        let logged = try await setup.login(server, identity: identity, presenting: ["whorl"])
        #expect(logged.status == 0 && logged.stdout.contains("logged-in"), "\(logged.stderrLines)")

        let records = try await rig.auditRecords(mentioning: "use security key 'laptop' to log in as \(NSUserName())")
        #expect(records.map { $0["outcome"] as? String } == ["failure", "success"], "\(records)")
        #expect(records.allSatisfy { ($0["reason"] as? String ?? "").contains("ssh-sk-helper") },
                "the record names the helper ssh ran: \(records)")
        let verified = try await rig.vault.run(["audit", "verify"])
        #expect(verified.status == 0, "\(verified.stderrLines)")
        await setup.agent.stop()
    }

    /// A key made with `no-touch-required` may sign inside the reuse window without a new
    /// touch; such a signature says no one was verified, and a `verify-required` server
    /// refuses it, while it accepts the same key's signature made with a match.
    @Test func aSignatureMadeWithoutAMatchIsRefusedByTheServer() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        let identity = rig.home.path("id_ed25519_sk")
        let publicKey = try await setup.keygen(identity, ["no-touch-required"])
        let server = try await SSHAgentTests.Server.start(in: rig.home, authorizing: "no-touch-required,verify-required " + publicKey)
        defer { Task { await server.process.stop() } }

        let matched = try await setup.login(server, identity: identity, presenting: ["whorl"])
        #expect(matched.status == 0 && matched.stdout.contains("logged-in"), "\(matched.stderrLines)")
        // Inside the reuse window: signed without a touch, so without the verified flag.
        let reused = try await setup.login(server, identity: identity, presenting: [])
        #expect(reused.status != 0 && !reused.stdout.contains("logged-in"),
                "a signature no finger verified must not log in: \(reused.stderrLines)")
        let logged = setup.agent.errorLines
        #expect(logged.contains { $0.contains("(finger verified)") } && logged.contains { $0.contains("(not verified)") },
                "\(logged.suffix(6))")
        await setup.agent.stop()
    }

    /// The attack of issue 45: `ssh -A` to one host, then from there the provider reaches the
    /// forwarded agent and asks for a signature for a second, `verify-required` host. ssh
    /// bound that forwarded connection to the first session with its forwarding flag; the
    /// service judges the security key's signature by it, as an ordinary key's, and refuses
    /// before any finger is asked, naming the hop. The same key logs in directly.
    @Test func aSecurityKeyLoginThroughAForwardedAgentIsRefused() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        let identity = rig.home.path("id_ed25519_sk")
        let publicKey = try await setup.keygen(identity, ["verify-required", "user=laptop"])
        // The first hop is logged in to with a key file of its own; only the agent is forwarded.
        let hopKey = rig.home.path("id_hop")
        let madeHop = try await runProgram("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hopKey])
        try #require(madeHop.status == 0, "ssh-keygen: \(madeHop.stderr)")
        let hopLine = try String(contentsOfFile: hopKey + ".pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let first = try await SSHAgentTests.Server.start(in: rig.home, authorizing: hopLine)
        defer { Task { await first.process.stop() } }
        let secondHome = try TemporaryDirectory("touchgate-second-sshd")
        defer { secondHome.remove() }
        let second = try await SSHAgentTests.Server.start(in: secondHome, authorizing: "verify-required " + publicKey)
        defer { Task { await second.process.stop() } }

        let agentSocket = setup.environment["TOUCHGATE_AGENT_SOCKET"]!
        let inner = SSHAgentTests.Server.shellWords(["/usr/bin/ssh", "-o", "SecurityKeyProvider=\(setup.provider)"]
                                                    + second.sshArguments(identity: identity, "echo second-hop"))
        let outer = ["-A"] + first.sshArguments(identity: hopKey, "TOUCHGATE_AGENT_SOCKET=\"$SSH_AUTH_SOCK\" " + inner)
        let forwarded = try await rig.run("/usr/bin/ssh", outer, extra: ["SSH_AUTH_SOCK": agentSocket], presenting: ["whorl"])
        #expect(!forwarded.stdout.contains("second-hop") && forwarded.status != 0,
                "the forwarded security-key request logged in: \(forwarded.stderrLines)")
        let refused = try await rig.auditRecords(mentioning: "through agent forwarding")
        #expect(refused.count == 1 && refused.first?["outcome"] as? String == "denied", "\(refused)")
        let hostFingerprint = try await runProgram("/usr/bin/ssh-keygen", ["-l", "-f", rig.home.path("ssh_host_ed25519_key.pub")])
        let fingerprint = try #require(hostFingerprint.stdout.split(separator: " ").dropFirst().first.map(String.init))
        let refusal = refused.first?["reason"] as? String ?? ""
        #expect(refusal.contains(fingerprint),
                "the refusal names the host the agent was forwarded to: \(refused)")

        // Control: the same key, asked directly, logs in after a match.
        let direct = try await setup.login(second, identity: identity, presenting: ["whorl"])
        #expect(direct.status == 0 && direct.stdout.contains("logged-in"), "\(direct.stderrLines)")
        await setup.agent.stop()
    }

    @Test func keysOtherThanEd25519AndResidentKeysAreRefusedWithAReason() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        for (type, options) in [("ecdsa-sk", [String]()), ("ed25519-sk", ["resident"])] {
            let made = try await rig.run("/usr/bin/ssh-keygen",
                                         ["-q", "-t", type, "-w", setup.provider, "-N", "", "-f", rig.home.path("refused-\(type)")]
                                             + options.flatMap { ["-O", $0] },
                                         extra: setup.environment, stdin: Data("\n".utf8))
            #expect(made.status != 0, "\(type) \(options)")
            #expect(made.stderrLines.contains { $0.contains("touchgate-sk:") }, "the provider says why: \(made.stderrLines)")
        }
        // Without the agent, the provider names the socket it tried and how to start it.
        let missing = try await rig.run("/usr/bin/ssh-keygen",
                                        ["-q", "-t", "ed25519-sk", "-w", setup.provider, "-N", "", "-f", rig.home.path("nowhere")],
                                        extra: ["TOUCHGATE_AGENT_SOCKET": rig.home.path("no-agent.sock")], stdin: Data("\n".utf8))
        #expect(missing.status != 0 && missing.stderrLines.contains { $0.contains("no-agent.sock") && $0.contains("touchgate agent") },
                "\(missing.stderrLines)")
        await setup.agent.stop()
    }

    /// Without systemd and without an agent running, the provider starts one itself
    /// (`touchgate agent --launch`, found on PATH), as gpg starts gpg-agent; a second
    /// launch finds it listening and starts nothing.
    @Test func theProviderStartsTheAgentWhenNoneRuns() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        // That agent took the unlocked key with it; unlock in-process again, into the keyring.
        await setup.agent.stop()
        try #require(try await rig.vault.withPassphrase(["unlock"]).status == 0)
        let (runtime, environment) = try rig.shellEnvironment()
        // The key is in the keyring (in-process unlock); the agent started takes it over.
        var keygen = CLIProcess(environment: environment)
        keygen.binaryOverride = "/usr/bin/ssh-keygen"
        let made = try await keygen.run(["-q", "-t", "ed25519-sk", "-w", setup.provider, "-O", "user=started", "-N", "",
                                         "-f", rig.home.path("id_started")], stdin: Data("\n".utf8))
        defer { Self.killAgents(runningIn: runtime) }
        #expect(made.status == 0, "\(made.stdout) \(made.stderrLines)")
        #expect(FileManager.default.fileExists(atPath: runtime + "/touchgate/ssh-agent.sock"))
        var launcher = CLIProcess(environment: environment)
        launcher.binaryOverride = rig.bin + "/touchgate"
        let again = try await launcher.run(["agent", "--launch", "--json"])
        #expect(again.status == 0 && again.json?["pid"] == nil
                && again.json?["ssh-auth-sock"] as? String == runtime + "/touchgate/ssh-agent.sock",
                "an agent already listens: nothing started, the same line printed: \(again.stdout) \(again.stderrLines)")
        let log = try String(contentsOfFile: runtime + "/touchgate/agent.log", encoding: .utf8)
        #expect(log.contains("made security key 'started'"), "the started agent logs beside its socket: \(log)")
    }

    /// Kills the agents whose environment names `runtime` (started detached, in a session of
    /// their own, so no test process group holds them).
    static func killAgents(runningIn runtime: String) {
        let marker = "XDG_RUNTIME_DIR=" + runtime
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry),
                  let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ"),
                  environ.split(separator: 0).contains(where: { String(decoding: $0, as: UTF8.self) == marker }),
                  let command = try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8),
                  command.contains("agent") else { continue }
            kill(pid, SIGKILL)
        }
    }
}
