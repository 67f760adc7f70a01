import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate agent` under the real OpenSSH programs: the vault's key is listed by
/// ssh-add, signs for ssh-keygen only after the enrolled finger, refuses what the agent
/// protocol cannot do here, and every signature is audited with what was signed and who
/// asked.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SSHAgentTests {
    /// A vault with whorl enrolled, a key made in it, and the agent serving it.
    struct Setup {
        let rig: HelperRig
        let agent: BackgroundProgram
        let socket: String
        let publicKeyPath: String
        let authorizedKey: String

        var sshEnvironment: [String: String] { ["SSH_AUTH_SOCK": socket] }
        /// Where the agent hosts the personal store (beside its SSH socket).
        var serviceSocket: String { (socket as NSString).deletingLastPathComponent + "/socket" }

        /// touchgate through the agent, which holds the unlocked key once it runs.
        func touchgate(_ arguments: [String], stdin: Data? = nil, presenting prints: [String] = []) async throws -> CLIResult {
            try await rig.run(rig.bin + "/touchgate", arguments, extra: ["TOUCHGATE_SOCKET": serviceSocket], stdin: stdin,
                              presenting: prints)
        }

        static func make(rig: HelperRig, fresh: Bool) async throws -> Setup {
            for tool in ["/usr/bin/ssh-add", "/usr/bin/ssh-keygen"] {
                try HelperRig.require(tool, package: "openssh-client")
            }
            try await rig.vault.initAndUnlock()
            try await rig.vault.enroll("whorl")
            let made = try await rig.vault.run(["ssh", "keygen", "work"] + (fresh ? ["--fresh"] : []))
            try #require(made.status == 0, "ssh keygen: \(made.stderrLines)")
            let authorizedKey = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let publicKeyPath = rig.home.path("work.pub")
            try Data((authorizedKey + "\n").utf8).write(to: URL(fileURLWithPath: publicKeyPath))
            let socket = rig.home.path("agent.sock")
            let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json", "--socket", socket],
                                                    environment: rig.environment, finger: rig.vault.finger)
            try await waitForSocket(socket)
            return Setup(rig: rig, agent: agent, socket: socket, publicKeyPath: publicKeyPath, authorizedKey: authorizedKey)
        }

        /// A new agent on the same socket, after `old.agent` was stopped.
        static func restart(_ old: Setup) async throws -> Setup {
            try? FileManager.default.removeItem(atPath: old.socket)
            let agent = try await BackgroundProgram(old.rig.bin + "/touchgate", ["agent", "--json", "--socket", old.socket],
                                                    environment: old.rig.environment, finger: old.rig.vault.finger)
            try await waitForSocket(old.socket)
            return Setup(rig: old.rig, agent: agent, socket: old.socket, publicKeyPath: old.publicKeyPath,
                         authorizedKey: old.authorizedKey)
        }

        /// Signs a new file through the agent (`ssh-keygen -Y sign -n file`) with the key of
        /// `publicKey` (the one `ssh keygen` made when nil); ssh-keygen's result and whether the
        /// signature verifies against the public key.
        func sign(presenting prints: [String], publicKey: String? = nil) async throws -> (CLIResult, Bool) {
            let publicKeyPath = publicKey ?? self.publicKeyPath
            let message = rig.home.path("message-\(UUID().uuidString)")
            try Data("sign me\n".utf8).write(to: URL(fileURLWithPath: message))
            let signed = try await rig.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", publicKeyPath, "-n", "file", message],
                                           extra: sshEnvironment, presenting: prints)
            guard signed.status == 0 else { return (signed, false) }
            let checked = try await rig.run("/bin/sh", ["-c", "exec /usr/bin/ssh-keygen -Y check-novalidate -n file -f \"$1\" -s \"$2\" < \"$3\"",
                                                       "sh", publicKeyPath, message + ".sig", message])
            return (signed, checked.status == 0 && checked.stdout.contains("Good \"file\" signature"))
        }
    }

    @Test func theVaultKeySignsOnlyForTheEnrolledFinger() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        var setup = try await Setup.make(rig: rig, fresh: true)

        #expect(setup.authorizedKey.hasPrefix("ssh-ed25519 AAAA") && setup.authorizedKey.hasSuffix(" work"))
        let listed = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(listed.status == 0 && listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == setup.authorizedKey,
                "ssh-add -L: \(listed.stdout) \(listed.stderrLines)")
        let fingerprints = try await rig.run("/usr/bin/ssh-add", ["-l"], extra: setup.sshEnvironment)
        let local = try await rig.run("/usr/bin/ssh-keygen", ["-l", "-f", setup.publicKeyPath])
        #expect(fingerprints.stdout.split(separator: " ").dropFirst().first == local.stdout.split(separator: " ").dropFirst().first,
                "ssh-add -l and ssh-keygen -l agree on the fingerprint: \(fingerprints.stdout) / \(local.stdout)")

        let (refused, _) = try await setup.sign(presenting: ["arch"])
        #expect(refused.status != 0, "a stranger's finger signs nothing: \(refused.stderrLines)")
        let (signed, verifies) = try await setup.sign(presenting: ["whorl"])
        #expect(signed.status == 0, "\(signed.stderrLines)")
        #expect(verifies, "the signature verifies against the key ssh keygen printed")

        // ssh-add -d and -D take keys out of this agent, not out of the vault: a removed key
        // is neither listed nor used, and touchgate ssh list still shows it.
        for arguments in [["-d", setup.publicKeyPath], ["-D"]] {
            let again = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
            #expect(again.stdout.contains(setup.authorizedKey), "listed before ssh-add \(arguments): \(again.stdout)")
            let removed = try await rig.run("/usr/bin/ssh-add", arguments, extra: setup.sshEnvironment)
            #expect(removed.status == 0, "ssh-add \(arguments): \(removed.stderrLines)")
            let gone = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
            #expect(gone.status == 1 && !gone.stdout.contains(setup.authorizedKey), "after ssh-add \(arguments): \(gone.stdout)")
            let (unsigned, _) = try await setup.sign(presenting: [])
            #expect(unsigned.status != 0, "a removed key signs nothing: \(unsigned.stderrLines)")
            let kept = try await setup.touchgate(["ssh", "list"])
            #expect(kept.stdout.contains("work"), "the vault keeps it: \(kept.stdout)")
            if arguments == ["-d", setup.publicKeyPath] {
                let twice = try await rig.run("/usr/bin/ssh-add", arguments, extra: setup.sshEnvironment)
                #expect(twice.status != 0, "a key this agent no longer offers cannot be removed again")
                // Which keys are offered is the vault's, not an agent's: a new agent, once
                // unlocked (the key the last one held in its memory ended with it), still does
                // not offer the withdrawn key, until touchgate ssh offer offers it again.
                await setup.agent.stop()
                setup = try await Setup.restart(setup)
                let locked = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
                #expect(locked.status == 1 && locked.stdout.contains("no identities"), "\(locked.stdout)")
                let unlocked = try await setup.touchgate(["unlock", "--passphrase-fd", "0"], stdin: VaultRig.lines(VaultRig.passphrase))
                #expect(unlocked.status == 0, "\(unlocked.stderrLines)")
                let stillGone = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
                #expect(!stillGone.stdout.contains(setup.authorizedKey), "a new agent offered a withdrawn key: \(stillGone.stdout)")
                let offered = try await setup.touchgate(["ssh", "offer", "work", "--json"])
                #expect(offered.status == 0 && offered.json?["offered"] == nil, "\(offered.stdout) \(offered.stderrLines)")
            }
        }

        // Each change of what the agents offer is in the trail, naming the program that asked.
        let offers = try await rig.vault.auditTrail().filter { $0["event"] as? String == "ssh.offer" }
        #expect(offers.compactMap { $0["reason"] as? String }.map { $0.contains("withdrawn") } == [true, false, true],
                "\(offers)")
        let firstReason = offers.first?["reason"] as? String ?? ""
        #expect(firstReason.contains("/usr/bin/ssh-add"), "\(offers)")
        let records = try await rig.auditRecords(mentioning: "use SSH key 'work' to sign a file")
        #expect(records.map { $0["outcome"] as? String } == ["failure", "success"], "\(records)")
        #expect(records.allSatisfy { ($0["reason"] as? String ?? "").contains("/usr/bin/ssh-keygen") },
                "the record names the program that asked: \(records)")
        await setup.agent.stop()
    }

    /// An sshd on a loopback port, started by the test: its own Ed25519 host key, the key
    /// printed by `ssh keygen` as root's only authorized key, nothing else to log in with.
    struct Server {
        let port: Int
        let hostKeyLine: String
        let knownHosts: String
        let process: BackgroundProgram

        static func start(in home: TemporaryDirectory, authorizing key: String) async throws -> Server {
            try HelperRig.require("/usr/sbin/sshd", package: "openssh-server")
            // sshd separates privileges into this directory, which its package's service makes.
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
            let hostKey = home.path("ssh_host_ed25519_key")
            let made = try await runProgram("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey])
            try #require(made.status == 0, "ssh-keygen: \(made.stderr)")
            let hostKeyLine = try String(contentsOfFile: hostKey + ".pub", encoding: .utf8)
                .split(separator: " ").prefix(2).joined(separator: " ")
            let authorized = home.path("authorized_keys")
            try Data((key + "\n").utf8).write(to: URL(fileURLWithPath: authorized))
            let port = try freeLoopbackPort()
            let config = home.path("sshd_config")
            try Data("""
                ListenAddress 127.0.0.1
                Port \(port)
                HostKey \(hostKey)
                PidFile none
                UsePAM no
                StrictModes no
                AuthorizedKeysFile \(authorized)
                PubkeyAuthentication yes
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                PermitRootLogin prohibit-password
                AllowAgentForwarding yes
                LogLevel VERBOSE

                """.utf8).write(to: URL(fileURLWithPath: config))
            let knownHosts = home.path("known_hosts")
            try Data("[127.0.0.1]:\(port) \(hostKeyLine)\n".utf8).write(to: URL(fileURLWithPath: knownHosts))
            let process = try await BackgroundProgram("/usr/sbin/sshd", ["-D", "-e", "-f", config], environment: [:], finger: nil)
            for _ in 0..<200 {
                if (try? connectsTo(port)) == true { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            return Server(port: port, hostKeyLine: hostKeyLine, knownHosts: knownHosts, process: process)
        }

        /// `words` quoted for a remote shell, one word each.
        static func shellWords(_ words: [String]) -> String {
            words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        }

        /// `ssh -A` to this server with `identity`, running there `ssh` to `next` with
        /// `nextIdentity` (the forwarded agent's key), which runs `command`.
        func forwarding(identity: String, to next: Server, nextIdentity: String, _ command: String) -> [String] {
            ["-A"] + sshArguments(identity: identity, "/usr/bin/ssh " + Self.shellWords(next.sshArguments(identity: nextIdentity, command)))
        }

        /// `ssh` to this server as the test's user, with only the agent's key, running `command`.
        func sshArguments(identity: String, _ command: String) -> [String] {
            ["-F", "/dev/null", "-p", String(port), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
             "-o", "IdentityFile=\(identity)", "-o", "UserKnownHostsFile=\(knownHosts)", "-o", "StrictHostKeyChecking=yes",
             "-o", "ConnectTimeout=20", "\(NSUserName())@127.0.0.1", command]
        }

        static func connectsTo(_ port: Int) throws -> Bool {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
    }

    @Test func sshLogsInToARealServerOnlyAfterTheEnrolledFinger() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try HelperRig.require("/usr/bin/ssh", package: "openssh-client")
        let setup = try await Setup.make(rig: rig, fresh: true)
        let server = try await Server.start(in: rig.home, authorizing: setup.authorizedKey)
        defer { Task { await server.process.stop() } }
        let hostFingerprint = try await runProgram("/usr/bin/ssh-keygen", ["-l", "-f", rig.home.path("ssh_host_ed25519_key.pub")])
        let fingerprint = try #require(hostFingerprint.stdout.split(separator: " ").dropFirst().first.map(String.init))
        // The agent names the host as the user's known_hosts does.
        try FileManager.default.createDirectory(atPath: rig.home.path(".ssh"), withIntermediateDirectories: true)
        try Data("# test hosts\ngit.example.test,[127.0.0.1]:\(server.port) \(server.hostKeyLine)\n".utf8)
            .write(to: URL(fileURLWithPath: rig.home.path(".ssh/known_hosts")))

        let refused = try await rig.run("/usr/bin/ssh", server.sshArguments(identity: setup.publicKeyPath, "echo logged-in"),
                                        extra: setup.sshEnvironment, presenting: ["arch"])
        #expect(refused.status != 0 && !refused.stdout.contains("logged-in"), "a stranger's finger logs nobody in: \(refused.stderrLines)")
        let logged = try await rig.run("/usr/bin/ssh", server.sshArguments(identity: setup.publicKeyPath, "echo logged-in"),
                                       extra: setup.sshEnvironment, presenting: ["whorl"])
        #expect(logged.status == 0 && logged.stdout.contains("logged-in"), "\(logged.stderrLines)")

        // ssh bound the connection to the session the server proved: the records name the
        // user and the server's host key, checked against its signature.
        let purpose = "use SSH key 'work' to log in as \(NSUserName()) on git.example.test, 127.0.0.1:\(server.port) "
            + "(host key \(fingerprint))"
        let records = try await rig.auditRecords(mentioning: purpose)
        let trail = try await rig.vault.auditTrail().suffix(6)
        #expect(records.map { $0["outcome"] as? String } == ["failure", "success"], "\(trail)")
        #expect(records.allSatisfy { ($0["reason"] as? String ?? "").contains("/usr/bin/ssh ") }, "\(records)")

        // Three strangers in a row: the reader locks out, and the enrolled finger logs
        // nobody in until the lockout ends.
        for _ in 0..<3 {
            let stranger = try await rig.run("/usr/bin/ssh", server.sshArguments(identity: setup.publicKeyPath, "echo logged-in"),
                                             extra: setup.sshEnvironment, presenting: ["arch"])
            #expect(stranger.status != 0)
        }
        let duringLockout = try await rig.run("/usr/bin/ssh", server.sshArguments(identity: setup.publicKeyPath, "echo logged-in"),
                                              extra: setup.sshEnvironment, presenting: ["whorl"])
        #expect(duringLockout.status != 0 && !duringLockout.stdout.contains("logged-in"), "\(duringLockout.stderrLines)")
        let lockedOut = try await rig.auditRecords(mentioning: purpose)
        #expect(lockedOut.last?["outcome"] as? String == "denied" && (lockedOut.last?["reason"] as? String ?? "").contains("lock"),
                "\(lockedOut.last ?? [:])")
        let unlocked = try await setup.touchgate(["unlock", "--passphrase-fd", "0"], stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(unlocked.status == 0, "the passphrase lifts the lockout: \(unlocked.stderrLines)")

        // A locked vault signs nothing, and says how to go on.
        let locked = try await setup.touchgate(["lock"])
        #expect(locked.status == 0)
        let afterLock = try await rig.run("/usr/bin/ssh", server.sshArguments(identity: setup.publicKeyPath, "echo logged-in"),
                                          extra: setup.sshEnvironment, presenting: ["whorl"])
        #expect(afterLock.status != 0 && !afterLock.stdout.contains("logged-in"), "\(afterLock.stderrLines)")
        await server.process.stop()
        await setup.agent.stop()
    }

    @Test func aRequestForwardedFromAnotherHostIsRefused() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try HelperRig.require("/usr/bin/ssh", package: "openssh-client")
        let setup = try await Setup.make(rig: rig, fresh: false)
        let first = try await Server.start(in: rig.home, authorizing: setup.authorizedKey)
        defer { Task { await first.process.stop() } }
        let secondHome = try TemporaryDirectory("touchgate-second-sshd")
        defer { secondHome.remove() }
        let second = try await Server.start(in: secondHome, authorizing: setup.authorizedKey)
        defer { Task { await second.process.stop() } }

        // Logged in to the first host with -A, ssh there asks the agent for the second hop.
        let outer = first.forwarding(identity: setup.publicKeyPath, to: second, nextIdentity: setup.publicKeyPath, "echo second-hop")
        let result = try await rig.run("/usr/bin/ssh", outer, extra: setup.sshEnvironment, presenting: ["whorl"])
        #expect(!result.stdout.contains("second-hop"), "the forwarded request signed: \(result.stderrLines)")
        #expect(result.status != 0)
        let refused = try await rig.auditRecords(mentioning: "through agent forwarding")
        #expect(refused.count == 1 && refused.first?["outcome"] as? String == "denied", "\(refused)")
        let direct = try await rig.auditRecords(mentioning: "use SSH key 'work' to log in as")
        #expect(direct.map { $0["outcome"] as? String } == ["success"], "the first hop itself was signed: \(direct)")
        await first.process.stop()
        await second.process.stop()
        await setup.agent.stop()
    }

    /// Issue 45: a key added with `ssh-add -h` for both hops logs in to the second host from
    /// the first through the forwarded agent, the prompt and record naming the hop; added
    /// again for the first host alone, the same forwarded login is refused, naming why.
    @Test func aKeyAddedForItsHopsLogsInThroughForwarding() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try HelperRig.require("/usr/bin/ssh", package: "openssh-client")
        let setup = try await Setup.make(rig: rig, fresh: false)
        let keyFile = rig.home.path("id_hops")
        let made = try await runProgram("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "hops", "-f", keyFile])
        try #require(made.status == 0, "ssh-keygen: \(made.stderr)")
        let publicLine = try String(contentsOfFile: keyFile + ".pub", encoding: .utf8)
            .split(separator: " ").prefix(2).joined(separator: " ")
        let first = try await Server.start(in: rig.home, authorizing: publicLine)
        defer { Task { await first.process.stop() } }
        let secondHome = try TemporaryDirectory("touchgate-second-sshd")
        defer { secondHome.remove() }
        let second = try await Server.start(in: secondHome, authorizing: publicLine)
        defer { Task { await second.process.stop() } }
        // ssh-add -h finds each host's keys by name in known_hosts.
        let names = rig.home.path("hops_known_hosts")
        try Data("first-host \(first.hostKeyLine)\nsecond-host \(second.hostKeyLine)\n".utf8)
            .write(to: URL(fileURLWithPath: names))
        let added = try await rig.run("/usr/bin/ssh-add", ["-H", names, "-h", "first-host", "-h", "first-host>second-host", keyFile],
                                      extra: setup.sshEnvironment)
        try #require(added.status == 0, "ssh-add -h: \(added.stderrLines) \(setup.agent.errorLines.suffix(4))")

        let outer = first.forwarding(identity: keyFile + ".pub", to: second, nextIdentity: keyFile + ".pub", "echo second-hop")
        let through = try await rig.run("/usr/bin/ssh", outer, extra: setup.sshEnvironment, presenting: ["whorl", "whorl"])
        #expect(through.status == 0 && through.stdout.contains("second-hop"),
                "the forwarded login over its hops: \(through.stderrLines) \(setup.agent.errorLines.suffix(6))")
        let signed = try await rig.auditRecords(mentioning: "through first-host")
        #expect(signed.count == 1 && signed.first?["outcome"] as? String == "success", "\(signed)")
        let offered = try await rig.auditRecords(mentioning: "over first-host, first-host>second-host")
        #expect(offered.count == 1, "the offer and its hops are recorded: \(offered)")

        // Added again for the first host alone: the second hop is not among its destinations.
        let narrowed = try await rig.run("/usr/bin/ssh-add", ["-H", names, "-h", "first-host", keyFile], extra: setup.sshEnvironment)
        try #require(narrowed.status == 0, "\(narrowed.stderrLines)")
        let refused = try await rig.run("/usr/bin/ssh", outer, extra: setup.sshEnvironment, presenting: ["whorl", "whorl"])
        #expect(!refused.stdout.contains("second-hop") && refused.status != 0, "\(refused.stderrLines)")
        let denied = try await rig.auditRecords(mentioning: "not among the key's destinations")
        #expect(denied.count == 1 && denied.first?["outcome"] as? String == "denied", "\(denied)")
        await first.process.stop()
        await second.process.stop()
        await setup.agent.stop()
    }

    @Test func gitSignsACommitWithTheVaultKey() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try HelperRig.require("/usr/bin/git", package: "git")
        let setup = try await Setup.make(rig: rig, fresh: true)
        let repository = rig.home.path("repository")
        let signers = rig.home.path("allowed_signers")
        try Data("tester@example.com \(setup.authorizedKey)\n".utf8).write(to: URL(fileURLWithPath: signers))
        let git = ["-C", repository, "-c", "user.name=Tester", "-c", "user.email=tester@example.com",
                   "-c", "gpg.format=ssh", "-c", "user.signingkey=\(setup.publicKeyPath)",
                   "-c", "gpg.ssh.allowedSignersFile=\(signers)"]
        let made = try await rig.run("/usr/bin/git", ["init", "-q", repository])
        try #require(made.status == 0, "\(made.stderrLines)")
        let committed = try await rig.run("/usr/bin/git", git + ["commit", "-q", "-S", "--allow-empty", "-m", "signed"],
                                          extra: setup.sshEnvironment, presenting: ["whorl"])
        #expect(committed.status == 0, "\(committed.stderrLines)")
        let verified = try await rig.run("/usr/bin/git", git + ["verify-commit", "HEAD"])
        #expect(verified.status == 0 && verified.stderrLines.joined().contains("Good \"git\" signature"),
                "\(verified.stderrLines)")
        let refused = try await rig.run("/usr/bin/git", git + ["commit", "-q", "-S", "--allow-empty", "-m", "unsigned"],
                                        extra: setup.sshEnvironment, presenting: ["arch"])
        #expect(refused.status != 0, "a stranger's finger signs no commit")
        let records = try await rig.auditRecords(mentioning: "use SSH key 'work' to sign a git commit or tag")
        #expect(records.map { $0["outcome"] as? String } == ["success", "failure"], "\(records)")
        await setup.agent.stop()
    }

    @Test("git commit -S on a terminal: git reads ssh-keygen's errors, so the touch request and its outcome go to git's terminal")
    func gitCommitSaysWhatItWaitsForOnTheTerminal() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try HelperRig.require("/usr/bin/git", package: "git")
        let setup = try await Setup.make(rig: rig, fresh: true)
        let repository = rig.home.path("repository")
        let made = try await rig.run("/usr/bin/git", ["init", "-q", repository])
        try #require(made.status == 0, "\(made.stderrLines)")
        var environment = rig.environment.merging(setup.sshEnvironment) { $1 }
        environment["TERM"] = "xterm"
        environment["HOME"] = rig.home.path("")
        let git = "git -C \(repository) -c user.name=Tester -c user.email=tester@example.com -c gpg.format=ssh "
            + "-c user.signingkey=\(setup.publicKeyPath) commit -q -S --allow-empty -m"
        // A finger: the request names what it is for, on the terminal, before the touch.
        rig.vault.finger.present(["whorl"])
        let signed = try await TerminalSession("\(git) signed", directory: "/", environment: environment)
        #expect(try await signed.waitForLine(timeout: 20) { $0.contains("to sign a git commit or tag") }, "\(signed.output)")
        #expect(await signed.finish(timeout: 60) == 0, "\(signed.output)\n\(setup.agent.errorLines)")
        // A finger that is not enrolled: the refusal is said there too, not only in the agent's log.
        rig.vault.finger.present(["arch"])
        let refused = try await TerminalSession("\(git) refused", directory: "/", environment: environment)
        #expect(await refused.finish(timeout: 60) != 0)
        #expect(refused.output.contains("to sign a git commit or tag") && refused.output.contains("touchgate agent:"),
                "\(refused.output)")
        await setup.agent.stop()
    }

    @Test("a client that hangs up while the agent waits for its finger (a cancelled ssh or git) ends the wait at once: the trail says cancelled, the reader is free")
    func hangingUpCancelsTheWait() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, fresh: true)
        rig.vault.finger.present([])  // nobody touches
        let message = rig.home.path("cancelled-message")
        try Data("sign me\n".utf8).write(to: URL(fileURLWithPath: message))
        let log = rig.home.path("cancelled-signer.log")
        let signer = try await BackgroundProcess.start(
            "/usr/bin/ssh-keygen", ["-Y", "sign", "-f", setup.publicKeyPath, "-n", "file", message],
            environment: rig.environment.merging(setup.sshEnvironment) { $1 }, output: .file(log), error: .file(log))
        for _ in 0..<200 where !setup.agent.errorLines.contains(where: VirtualImageFinger.isPrompt) {
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(setup.agent.errorLines.contains(where: VirtualImageFinger.isPrompt), "\(setup.agent.errorLines)")
        await signer.terminate(signal: SIGKILL)
        // Recorded as cancelled within seconds, not as a timeout after the minute.
        var cancelled: [[String: Any]] = []
        for _ in 0..<50 where cancelled.isEmpty {
            try await Task.sleep(for: .milliseconds(200))
            cancelled = try await rig.auditRecords(mentioning: "cancelled")
        }
        let trail = try await rig.vault.auditTrail()
        #expect(!cancelled.isEmpty, "\(trail)\n\(setup.agent.errorLines)")
        // The reader is free for the next request at once.
        let (signed, valid) = try await setup.sign(presenting: ["whorl"])
        #expect(signed.status == 0 && valid, "\(signed.stderrLines)\n\(setup.agent.errorLines)")
        await setup.agent.stop()
    }

    @Test func startedBySystemdAtTheFirstConnectionItServesTheSocketItIsGiven() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let activate = try SystemTool.systemdSocketActivate.path()
        try await rig.vault.initAndUnlock()
        let made = try await rig.vault.run(["ssh", "keygen", "work"])
        try #require(made.status == 0, "ssh keygen: \(made.stderrLines)")
        // As touchgate-agent.socket does: systemd listens at %t/touchgate/ssh-agent.sock.
        let runtime = rig.home.path("run")
        try FileManager.default.createDirectory(atPath: runtime + "/touchgate", withIntermediateDirectories: true)
        let socket = runtime + "/touchgate/ssh-agent.sock"
        var environment = rig.environment
        environment["XDG_RUNTIME_DIR"] = runtime
        let passed = environment.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
        let agent = try await BackgroundProgram(activate, ["-l", socket] + passed + [rig.bin + "/touchgate", "agent", "--json"],
                                                environment: environment, finger: rig.vault.finger)
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let listed = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: ["SSH_AUTH_SOCK": socket])
        #expect(listed.status == 0 && listed.stdout.contains(made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)),
                "\(listed.stdout) \(listed.stderrLines)")
        await agent.stop()
    }

    @Test func sshAddSealsAKeyFileIntoTheVaultAndSshAddXLocksTheVault() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, fresh: false)
        let keyPath = rig.home.path("id_laptop")
        let made = try await rig.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "laptop", "-f", keyPath])
        try #require(made.status == 0, "ssh-keygen: \(made.stderrLines)")
        let publicLine = try String(contentsOfFile: keyPath + ".pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)

        // -c makes every use a touch; -t makes the agent offer the key for that long (it
        // stays sealed in the vault, as a key file stays on disk), and adding it again
        // offers it again.
        let added = try await rig.run("/usr/bin/ssh-add", ["-c", "-t", "2", keyPath], extra: setup.sshEnvironment)
        #expect(added.status == 0, "\(added.stderrLines)")
        let listed = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(listed.stdout.contains(publicLine), "\(listed.stdout)")
        try await Task.sleep(for: .seconds(3))
        let expired = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(!expired.stdout.contains(publicLine), "offered for 2 s only: \(expired.stdout)")
        let readded = try await rig.run("/usr/bin/ssh-add", [keyPath], extra: setup.sshEnvironment)
        #expect(readded.status == 0, "\(readded.stderrLines)")
        let relisted = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(relisted.stdout.contains(publicLine), "\(relisted.stdout)")
        let keys = try await setup.touchgate(["ssh", "list", "--json"])
        #expect(keys.stdout.contains("\"name\":\"laptop\"") && keys.stdout.contains("\"fresh\":true"), "\(keys.stdout)")

        // The file can go: the vault's copy signs, after a touch, and is never released.
        try FileManager.default.removeItem(atPath: keyPath)
        let (signed, verifies) = try await setup.sign(presenting: ["whorl"], publicKey: keyPath + ".pub")
        #expect(signed.status == 0 && verifies, "\(signed.stderrLines)")
        let released = try await setup.touchgate(["secret", "get", "laptop"], presenting: ["whorl"])
        #expect(released.status != 0 && released.stdout.isEmpty, "an SSH key is never released: \(released.stderrLines)")
        #expect(try await rig.auditRecords(mentioning: "SSH key added (ssh-ed25519, biometry-any, fresh touch)").count == 1)

        // ssh-add -x locks the vault; -X unlocks it with the vault's passphrase.
        let askpass = rig.home.path("askpass.sh")
        try Data("#!/bin/sh\necho '\(VaultRig.passphrase)'\n".utf8).write(to: URL(fileURLWithPath: askpass))
        chmod(askpass, 0o700)
        let asking = setup.sshEnvironment.merging(["SSH_ASKPASS": askpass, "SSH_ASKPASS_REQUIRE": "force"]) { $1 }
        let lock = try await rig.run("/usr/bin/ssh-add", ["-x"], extra: asking, stdin: Data())
        #expect(lock.status == 0, "\(lock.stderrLines)")
        let whileLocked = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(whileLocked.status == 1 && !whileLocked.stdout.contains(publicLine)
                && whileLocked.stdout.contains("The agent has no identities"),
                "a locked vault lists no key, as a locked ssh-agent does: \(whileLocked.stdout) \(whileLocked.stderrLines)")
        let unlock = try await rig.run("/usr/bin/ssh-add", ["-X"], extra: asking, stdin: Data())
        #expect(unlock.status == 0, "\(unlock.stderrLines)")
        let again = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(again.stdout.contains(publicLine), "\(again.stdout)")
        await setup.agent.stop()
    }

    @Test func throughTouchgatedTheDaemonDecidesAndTheAgentOnlyForwards() async throws {
        let daemon = try await DaemonRig()
        try await daemon.start()
        try await daemon.initialize()
        let made = try await daemon.run(["ssh", "keygen", "work", "--fresh"])
        try #require(made.status == 0, "ssh keygen: \(made.stderrLines)\n\(daemon.daemonLog)")
        let publicKeyPath = daemon.home.path("work.pub")
        try Data(made.stdout.utf8).write(to: URL(fileURLWithPath: publicKeyPath))
        let client = daemon.client()
        let socket = daemon.home.path("agent.sock")
        let agent = try await BackgroundProgram(daemon.binDirectory + "/touchgate", ["agent", "--json", "--socket", socket],
                                                environment: client.environment, finger: daemon.finger)
        try await waitForSocket(socket)
        let message = daemon.home.path("notes.txt")
        try Data("notes\n".utf8).write(to: URL(fileURLWithPath: message))
        var signer = CLIProcess(environment: client.environment.merging(["SSH_AUTH_SOCK": socket]) { $1 })
        signer.binaryOverride = "/usr/bin/ssh-keygen"
        daemon.finger.present(["whorl"])
        let signed = try await signer.run(["-Y", "sign", "-f", publicKeyPath, "-n", "file", message])
        #expect(signed.status == 0, "\(signed.stderrLines)\n\(daemon.daemonLog)")
        let checked = try await runProgram("/bin/sh", ["-c", "exec /usr/bin/ssh-keygen -Y check-novalidate -n file -f \"$1\" -s \"$2\" < \"$3\"",
                                                      "sh", publicKeyPath, message + ".sig", message])
        #expect(checked.status == 0, "\(checked.stdout) \(checked.stderr)")
        // The daemon's trail: the decision, what was signed, the agent it served and the
        // program the agent asked for.
        let trail = try VaultRig.exportedRecords(try await daemon.run(["audit", "export"]))
        let reasons = trail.compactMap { $0["reason"] as? String }.filter { $0.contains("use SSH key 'work' to sign a file") }
        #expect(reasons.count == 1 && reasons.allSatisfy { $0.contains("touchgate agent for pid ") && $0.contains("/usr/bin/ssh-keygen") },
                "\(reasons)")
        await agent.stop()
        daemon.stop()
    }

    @Test("forwarding to a touchgated that accepts no connection, the agent still serves its other clients at once")
    func aStalledDaemonHoldsOnlyTheRequestsForwardedToIt() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        // A "daemon" that listens and never accepts, its queue of connections full: a
        // connect to it blocks.
        let stalledPath = rig.home.path("stalled.sock")
        let stalled = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(stalled) }
        try #require(withUnixAddress(stalledPath, { bind(stalled, $0, $1) }) == 0 && listen(stalled, 0) == 0)
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<8 {
            let filler = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            let connected = withUnixAddress(stalledPath) { connect(filler, $0, $1) }
            fillers.append(filler)
            if connected != 0 { break }  // EAGAIN: the queue is full
        }

        let agentSocket = rig.home.path("agent.sock")
        var environment = rig.environment
        environment["TOUCHGATE_SOCKET"] = stalledPath
        let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json", "--socket", agentSocket],
                                                environment: environment, finger: nil)
        try await waitForSocket(agentSocket)
        // A listing is forwarded, and waits on the stalled daemon.
        let waiting = try RawClient(path: agentSocket)
        defer { waiting.close() }
        waiting.send([0, 0, 0, 1, 11])
        try await Task.sleep(for: .milliseconds(300))
        // Another client, meanwhile: the agent answers what it answers itself, at once.
        let started = Date()
        let query = Array("query".utf8)
        let asked = try await rawExchange(agentSocket, [0, 0, 0, UInt8(5 + query.count), 27, 0, 0, 0, UInt8(query.count)] + query)
        #expect(asked.count > 5 && asked[4] == 29, "\(asked)")
        #expect(Date().timeIntervalSince(started) < 2, "answered after \(Date().timeIntervalSince(started)) s")
        await agent.stop()
    }

    /// ECDSA P-256 keys: one sealed from a file by ssh-add, one made in the vault; both
    /// listed as their public files say, both sign what ssh-keygen verifies, and the made
    /// one logs in to a real sshd.
    @Test func ecdsaKeysAddedOrMadeSignAndLogIn() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try HelperRig.require("/usr/bin/ssh", package: "openssh-client")
        let setup = try await Setup.make(rig: rig, fresh: false)
        let keyPath = rig.home.path("id_ecdsa")
        let made = try await rig.run("/usr/bin/ssh-keygen", ["-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "nist", "-f", keyPath])
        try #require(made.status == 0, "ssh-keygen: \(made.stderrLines)")
        let publicLine = try String(contentsOfFile: keyPath + ".pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let added = try await rig.run("/usr/bin/ssh-add", [keyPath], extra: setup.sshEnvironment)
        #expect(added.status == 0, "\(added.stderrLines)")
        let listed = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(listed.stdout.contains(publicLine), "\(listed.stdout)")
        try FileManager.default.removeItem(atPath: keyPath)
        let (signed, verifies) = try await setup.sign(presenting: ["whorl"], publicKey: keyPath + ".pub")
        #expect(signed.status == 0 && verifies, "\(signed.stderrLines)")

        // Made in the vault, it logs in to a server that knows only it.
        let vaultKey = try await setup.touchgate(["ssh", "keygen", "p256", "--type", "ecdsa"])
        try #require(vaultKey.status == 0, "\(vaultKey.stderrLines)")
        let line = vaultKey.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("ecdsa-sha2-nistp256 AAAA") && line.hasSuffix(" p256"), "\(line)")
        let linePath = rig.home.path("p256.pub")
        try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: linePath))
        let server = try await Server.start(in: rig.home, authorizing: line)
        defer { Task { await server.process.stop() } }
        let logged = try await rig.run("/usr/bin/ssh", server.sshArguments(identity: linePath, "echo logged-in"),
                                       extra: setup.sshEnvironment, presenting: ["whorl"])
        #expect(logged.status == 0 && logged.stdout.contains("logged-in"), "\(logged.stderrLines)")
        let bogus = try await setup.touchgate(["ssh", "keygen", "x", "--type", "rsa"])
        #expect(bogus.status != 0 && bogus.stderrLines.joined().contains("ed25519 or ecdsa"), "\(bogus.stderrLines)")
        await setup.agent.stop()
    }

    /// `touchgate agent --launch`, for a session without systemd: it starts the agent
    /// detached, prints the lines a profile evaluates, and starts nothing when one listens.
    @Test func launchStartsOneAgentAndPrintsWhereItListens() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        let (runtime, environment) = try rig.shellEnvironment()
        // Without a runtime directory there is no private place: an error and a failing status,
        // nothing for `eval` to run (a profile's `eval "$(…)"` then leaves SSH_AUTH_SOCK alone).
        var nowhere = CLIProcess(environment: environment.filter { $0.key != "XDG_RUNTIME_DIR" })
        nowhere.binaryOverride = rig.bin + "/touchgate"
        let refused = try await nowhere.run(["agent", "--launch"])
        #expect(refused.status == 64 && refused.stdout.isEmpty
                    && refused.stderrLines.joined().contains("XDG_RUNTIME_DIR is not set"), "\(refused.status) \(refused.stderrLines)")
        var launcher = CLIProcess(environment: environment)
        launcher.binaryOverride = rig.bin + "/touchgate"
        let first = try await launcher.run(["agent", "--launch"])
        defer { SecurityKeyTests.killAgents(runningIn: runtime) }
        let socket = runtime + "/touchgate/ssh-agent.sock"
        #expect(first.status == 0 && first.stdout.hasPrefix("SSH_AUTH_SOCK=\(socket); export SSH_AUTH_SOCK;\nTOUCHGATE_AGENT_PID="),
                "\(first.stdout) \(first.stderrLines)")
        let listed = try await rig.run("/usr/bin/ssh-add", ["-l"], extra: ["SSH_AUTH_SOCK": socket])
        #expect(listed.stdout.contains("no identities"), "the launched agent answers: \(listed.stdout) \(listed.stderrLines)")
        let second = try await launcher.run(["agent", "--launch"])
        #expect(second.status == 0 && second.stdout == "SSH_AUTH_SOCK=\(socket); export SSH_AUTH_SOCK;\n",
                "\(second.stdout) \(second.stderrLines)")
        // The shell's commands reach it, and it holds the key it took from the keyring.
        var shell = CLIProcess(environment: environment)
        shell.binaryOverride = rig.bin + "/touchgate"
        let status = try await shell.run(["status", "--json"])
        #expect(status.json?["locked"] as? Bool == false
                && (status.json?["trust-boundary"] as? String ?? "").hasPrefix("touchgate agent"), "\(status.stdout)")
    }

    /// The agent at `$XDG_RUNTIME_DIR/touchgate/socket` serves only the commands whose data
    /// directory is the store it hosts: a shell pointing `XDG_DATA_HOME` at another (the
    /// README's throwaway demo) keeps its commands in-process on its own store, and another
    /// spelling of the agent's directory reaches the agent.
    @Test func onlyCommandsOnTheAgentsOwnStoreReachIt() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        let (runtime, shell) = try rig.shellEnvironment()
        let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json"], environment: shell,
                                                finger: rig.vault.finger)
        defer { SecurityKeyTests.killAgents(runningIn: runtime) }
        try await waitForSocket(runtime + "/touchgate/socket")
        func boundary(_ dataHome: String?) async throws -> String {
            var environment = shell
            environment["XDG_DATA_HOME"] = dataHome
            var process = CLIProcess(environment: environment)
            process.binaryOverride = rig.bin + "/touchgate"
            let status = try await process.run(["status", "--json"])
            return (status.json?["trust-boundary"] as? String ?? "") + " initialized=\(status.json?["initialized"] as? Bool ?? false)"
        }
        let own = try #require(shell["XDG_DATA_HOME"])
        #expect(try await boundary(own).hasPrefix("touchgate agent"), "the agent's own store goes to the agent")

        let elsewhere = rig.home.path("demo-data")
        let demo = try await boundary(elsewhere)
        #expect(demo.hasPrefix("in-process") && demo.hasSuffix("initialized=false"),
                "another data directory stays in-process, on its own (empty) store: \(demo)")
        #expect(FileManager.default.fileExists(atPath: rig.home.path("data/touchgate/touchgate.sqlite")))

        try FileManager.default.createSymbolicLink(atPath: rig.home.path("data-link"), withDestinationPath: own)
        #expect(try await boundary(rig.home.path("data-link")).hasPrefix("touchgate agent"),
                "a symbolic link to the agent's directory is the same store")

        // The record beside the socket (what a command decides by) lying, as one left by a
        // killed agent would, that the agent hosts the demo's store: the agent's hello says
        // otherwise, the command stops before sending anything and says so, and the record goes.
        let record = runtime + "/touchgate/socket.store"
        let recorded = try String(contentsOfFile: record, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: elsewhere + "/touchgate", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var demoStatus = stat()
        try #require(stat(elsewhere + "/touchgate", &demoStatus) == 0)
        let agentFields = recorded.split(separator: " ")
        try #require(agentFields.count == 3, "the record: \(recorded)")
        try Data("\(demoStatus.st_dev):\(demoStatus.st_ino) \(agentFields[1]) \(agentFields[2])".utf8)
            .write(to: URL(fileURLWithPath: record))
        var misled = shell
        misled["XDG_DATA_HOME"] = elsewhere
        var process = CLIProcess(environment: misled)
        process.binaryOverride = rig.bin + "/touchgate"
        let refused = try await process.run(["status"])
        #expect(refused.status == 75 && refused.stderrLines.joined().contains("hosts another store"),
                "\(refused.status) \(refused.stderrLines)")
        #expect(!FileManager.default.fileExists(atPath: record), "the misleading record is gone")
        #expect(try await boundary(elsewhere).hasPrefix("in-process"), "then the demo's commands stay in-process")
        #expect(try await boundary(own).hasPrefix("touchgate agent"), "and the agent's own store's reach it, by its hello")
        #expect(recorded.hasSuffix("\n") && agentFields[0].contains(":"), "\(recorded)")

        // Moved away and a new directory made in its place: whichever serves it, the store is
        // the new (empty) one, not the one the agent opened first.
        try FileManager.default.moveItem(atPath: own + "/touchgate", toPath: rig.home.path("moved"))
        try FileManager.default.createDirectory(atPath: own + "/touchgate", withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let remade = try await boundary(own)
        #expect(remade.hasSuffix("initialized=false"), "\(remade)")
        await agent.stop()
    }

    /// Where nothing listens (no systemd user manager started the agent), the first command
    /// on the user's default store starts touchgate agent, as gpg starts gpg-agent, and every
    /// later one reaches that one agent; `TOUCHGATE_SOCKET=` (empty) and another data
    /// directory stay in-process and start nothing. The agent stops once its store's
    /// directory is gone.
    @Test func theFirstCommandOnTheDefaultStoreStartsTheAgent() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        var (runtime, shell) = try rig.shellEnvironment()
        shell["XDG_DATA_HOME"] = nil  // the default: ~/.local/share
        defer { SecurityKeyTests.killAgents(runningIn: runtime) }
        func touchgate(_ arguments: [String], _ extra: [String: String?] = [:], stdin: Data? = nil) async throws -> CLIResult {
            var environment = shell
            for (name, value) in extra { environment[name] = value }
            var process = CLIProcess(environment: environment)
            process.binaryOverride = rig.bin + "/touchgate"
            return try await process.run(arguments, stdin: stdin)
        }
        func agents() -> [Int32] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
                guard let pid = Int32(entry),
                      let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ"),
                      environ.split(separator: 0).contains(where: { String(decoding: $0, as: UTF8.self) == "XDG_RUNTIME_DIR=" + runtime }),
                      let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                      command.split(separator: 0).map({ String(decoding: $0, as: UTF8.self) }).dropFirst().first == "agent"
                else { return nil }
                return pid
            }
        }
        let boundary = { (run: CLIResult) in run.json?["trust-boundary"] as? String ?? "\(run.stdout) \(run.stderrLines)" }

        let forced = try await touchgate(["status", "--json"], ["TOUCHGATE_SOCKET": ""])
        let elsewhere = try await touchgate(["status", "--json"], ["XDG_DATA_HOME": rig.home.path("demo")])
        #expect(boundary(forced).hasPrefix("in-process") && boundary(elsewhere).hasPrefix("in-process"),
                "\(boundary(forced)) / \(boundary(elsewhere))")
        #expect(agents().isEmpty, "nothing started for an empty TOUCHGATE_SOCKET or another store")

        let made = try await touchgate(["init", "--kdf", "minimum", "--passphrase-fd", "0"],
                                       stdin: Data("\(ReadmeRecipeTests.passphrase)\n".utf8))
        #expect(made.status == 0, "init, the first command on the default store: \(made.stderrLines)")
        let status = try await touchgate(["status", "--json"])
        #expect(boundary(status).hasPrefix("touchgate agent"), "the default store's commands go to the agent")
        let started = agents()
        #expect(started.count == 1, "one agent: \(started)")
        let again = try await touchgate(["status", "--json"])
        #expect(boundary(again).hasPrefix("touchgate agent") && agents() == started, "the same agent serves on")
        let log = (try? String(contentsOfFile: runtime + "/touchgate/agent.log", encoding: .utf8)) ?? ""
        #expect(FileManager.default.fileExists(atPath: runtime + "/touchgate/ssh-agent.sock"), "\(log)")

        // Its store's directory deleted: it stops (within the two seconds it looks).
        try FileManager.default.removeItem(atPath: rig.home.path(".local/share/touchgate"))
        for _ in 0..<100 where !agents().isEmpty {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(agents().isEmpty, "the agent of a deleted store stopped: \((try? String(contentsOfFile: runtime + "/touchgate/agent.log", encoding: .utf8)) ?? "")")
    }

    /// In the personal mode the agent hosts the store: it takes the unlocked key out of the
    /// kernel keyring into its own memory, a shell's touchgate commands reach it at
    /// `$XDG_RUNTIME_DIR/touchgate/socket` without any setting, and the key ends with it.
    @Test func theAgentHoldsTheUnlockedKeyInsteadOfTheKernelKeyring() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        try await rig.vault.enroll("whorl")
        let (runtime, shell) = try rig.shellEnvironment()
        func touchgate(_ arguments: [String], inProcess: Bool = false, stdin: Data? = nil,
                       presenting prints: [String] = []) async throws -> CLIResult {
            var process = CLIProcess(environment: inProcess ? rig.environment : shell)
            process.binaryOverride = rig.bin + "/touchgate"
            rig.vault.finger.present(prints)
            let finger = rig.vault.finger
            return try await process.run(arguments, stdin: stdin) { line, _ in finger.handle(line) }
        }
        let locked = { (run: CLIResult) in run.json?["locked"] as? Bool }
        #expect(locked(try await touchgate(["status", "--json"])) == false, "unlocked in-process, in the keyring")

        let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json"], environment: shell,
                                                finger: rig.vault.finger)
        try await waitForSocket(runtime + "/touchgate/socket")
        try await waitForSocket(runtime + "/touchgate/ssh-agent.sock")
        for _ in 0..<100 {
            if agent.errorLines.contains(where: { $0.contains("kernel keyring") }) { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(agent.errorLines.contains { $0.contains("took the unlocked vault key out of the kernel keyring") },
                "\(agent.errorLines)")

        // The keyring holds it no more: the in-process mode finds the vault locked.
        let inProcess = try await touchgate(["status", "--json"], inProcess: true)
        #expect(locked(inProcess) == true, "\(inProcess.stdout)")
        // The shell's commands reach the agent, which holds it, and serve as ever.
        let hosted = try await touchgate(["status", "--json"])
        #expect(locked(hosted) == false && hosted.json?["mode"] as? String == "personal", "\(hosted.stdout) \(hosted.stderrLines)")
        let boundary = hosted.json?["trust-boundary"] as? String ?? ""
        #expect(boundary.hasPrefix("touchgate agent"), "\(hosted.stdout)")
        let added = try await touchgate(["secret", "add", "note", "--policy", "biometry-any"], stdin: Data("kept here\n".utf8))
        #expect(added.status == 0, "\(added.stderrLines)")
        let released = try await touchgate(["secret", "get", "note"], presenting: ["whorl"])
        #expect(released.status == 0 && released.stdout == "kept here", "\(released.stdout) \(released.stderrLines)")
        // Even root names no other user here: the agent holds this user's store only.
        let otherUser = try await touchgate(["verify", "--user", "daemon"], presenting: ["whorl"])
        #expect(otherUser.status != 0 && otherUser.stderrLines.joined().contains("serves its own user's personal store only"),
                "\(otherUser.stdout) \(otherUser.stderrLines)")
        let ssh = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: ["SSH_AUTH_SOCK": runtime + "/touchgate/ssh-agent.sock"])
        #expect(ssh.stdout.contains("no identities"), "the same agent answers ssh: \(ssh.stdout)")

        // Killed, the agent takes the key with it: the shell's commands run in-process again
        // (its socket file left behind reaches no one) and find the vault locked.
        await agent.stop()
        let after = try await touchgate(["status", "--json"])
        #expect(locked(after) == true && (after.json?["trust-boundary"] as? String ?? "").hasPrefix("in-process"),
                "\(after.stdout) \(after.stderrLines)")
    }

    @Test func hostileClientsGetFailuresAndTheAgentServesOn() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, fresh: false)
        let hostile: [[UInt8]] = [
            [0, 0, 0, 0],                             // an empty message
            [0, 0, 0, 1, 99],                         // an unknown message
            [0, 0, 0, 5, 13, 0, 0, 0, 200],           // a sign request whose key blob outruns the message
            [0, 0, 0, 3, 27, 0, 0],                   // an extension cut short
            [0xff, 0xff, 0xff, 0xff],                 // a length past the agent's limit
            [0, 0, 0, 9, 17, 0, 0, 0, 7] + Array("ssh-rsa".utf8).prefix(4),  // an add that ends early
        ]
        for bytes in hostile {
            let answer = try await rawExchange(setup.socket, bytes)
            #expect(answer.isEmpty || answer == [0, 0, 0, 1, 5], "\(bytes) got \(answer)")
        }
        let listed = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(listed.stdout.contains(setup.authorizedKey), "the agent serves on: \(listed.stderrLines)")

        // A first message already whole is answered at once; one sent in two parts, the body
        // after a pause, is read whole by the connection's thread, not taken for a malformed
        // one; a lying length after a whole first message ends the connection after its answer.
        let split = try await offThePool {
            let client = try RawClient(path: setup.socket)
            defer { client.close() }
            client.send([0, 0, 0, 1])
            usleep(300_000)
            client.send([11])
            client.finishSending()
            return client.readToEnd()
        }
        #expect(split.count > 5 && split[4] == 12, "a split first message got \(split)")
        let thenLying = try await rawExchange(setup.socket, [0, 0, 0, 1, 11, 0xff, 0xff, 0xff, 0xff])
        #expect(thenLying.count > 5 && thenLying[4] == 12, "\(thenLying)")
        let identitiesLength = Int(thenLying[0]) << 24 | Int(thenLying[1]) << 16 | Int(thenLying[2]) << 8 | Int(thenLying[3])
        #expect(thenLying.count == 4 + identitiesLength, "something followed the first answer: \(thenLying)")

        // A message far past the usual 4 KiB buffer, sent in pieces with pauses, then a
        // listing on the same connection: the buffer grows for it, shrinks after, and keeps
        // the framing (the unknown extension is refused, the listing answered).
        let large = try await offThePool {
            let client = try RawClient(path: setup.socket)
            defer { client.close() }
            let name = Array("huge@example.org".utf8)
            let body: [UInt8] = [27, 0, 0, 0, UInt8(name.count)] + name + Array(repeating: 0x41, count: 100_000)
            let length = body.count
            let frame = [UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
                + body + [0, 0, 0, 1, 11]
            var offset = 0
            while offset < frame.count {
                let end = min(frame.count, offset + 30_000)
                client.send(Array(frame[offset..<end]))
                offset = end
                usleep(100_000)
            }
            client.finishSending()
            return client.readToEnd()
        }
        #expect(large.count > 10 && Array(large.prefix(5)) == [0, 0, 0, 1, 5] && large[9] == 12,
                "a failure, then the identities: \(large.prefix(16))")

        // The query extension lists what this agent answers; with contents it is malformed.
        let query = Array("query".utf8)
        func u32(_ value: Int) -> [UInt8] { [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func string(_ bytes: [UInt8]) -> [UInt8] { u32(bytes.count) + bytes }
        let asked = try await rawExchange(setup.socket, string([27] + string(query)))
        let names = ["query", "session-bind@openssh.com", "sk-enroll@touchgate", "sk-sign@touchgate"]
        #expect(asked == string([29] + string(query) + u32(names.count) + names.flatMap { string(Array($0.utf8)) }), "\(asked)")
        let overlong = try await rawExchange(setup.socket, string([27] + string(query) + [0]))
        #expect(overlong == [0, 0, 0, 1, 5], "\(overlong)")

        // Two clients that send requests by the thousand and never read an answer, and
        // twenty that send half a message and wait: another client is served meanwhile, at
        // once; the flooders are disconnected once their unread answers fill their sockets.
        let flooders = try (0..<2).map { _ in try RawClient(path: setup.socket) }
        defer { flooders.forEach { $0.close() } }
        let halves = try (0..<20).map { _ in try RawClient(path: setup.socket) }
        defer { halves.forEach { $0.close() } }
        for half in halves { half.send([0, 0]) }
        let requests = Array(repeating: [0, 0, 0, 1, 11] as [UInt8], count: 40_000).flatMap { $0 }
        for flooder in flooders { #expect(flooder.sendWithoutWaiting(requests) > 0) }
        try await Task.sleep(for: .seconds(1))
        let started = Date()
        let beside = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
        #expect(beside.stdout.contains(setup.authorizedKey), "\(beside.stderrLines)")
        #expect(Date().timeIntervalSince(started) < 3, "served beside the flooders in \(Date().timeIntervalSince(started)) s")
        for flooder in flooders {
            let reading = Date()
            let answered = try await offThePool { flooder.readToEnd() }
            #expect(Date().timeIntervalSince(reading) < 5, "a flooder was not disconnected")
            #expect(!answered.isEmpty && answered.count < 40_000 * 9, "every request answered (\(answered.count) bytes): the flooder was never cut off")
        }

        // Another user who can reach the socket (it is 0600; here opened up on purpose) is
        // turned away by the kernel's word on who connected, before anything is read.
        if getuid() == 0 {
            chmod(rig.home.url.path, 0o755)
            chmod(setup.socket, 0o666)
            let stranger = try await runProgram("/usr/bin/setpriv", ["--reuid=4243", "--regid=4243", "--clear-groups", "--",
                                                                      "/usr/bin/ssh-add", "-L"],
                                                environment: ["SSH_AUTH_SOCK": setup.socket])
            #expect(stranger.status != 0 && !stranger.stdout.contains("ssh-ed25519"), "\(stranger.stdout) \(stranger.stderr)")
        }
        await setup.agent.stop()
    }

    /// Issue 45: 64 connections from the user's own processes that never send anything took
    /// every place, and each new client was turned away. Now a newcomer takes the place of the
    /// client idle longest, so ssh-add is served, again and again, while they sit.
    @Test func idleConnectionsCannotLockOtherClientsOut() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, fresh: false)
        let idle = try (0..<64).map { _ in try RawClient(path: setup.socket) }
        defer { idle.forEach { $0.close() } }
        try await Task.sleep(for: .milliseconds(300))
        for round in 0..<3 {
            let listed = try await rig.run("/usr/bin/ssh-add", ["-L"], extra: setup.sshEnvironment)
            #expect(listed.status == 0 && listed.stdout.contains(setup.authorizedKey),
                    "round \(round): \(listed.stderrLines) \(setup.agent.errorLines.suffix(3))")
        }
        #expect(setup.agent.errorLines.contains { $0.contains("closed the one idle longest") },
                "\(setup.agent.errorLines.suffix(5))")
        // The first idle ones gave way: the kernel tells them their connection closed.
        let closed = try await offThePool { idle[0].readToEnd() }
        #expect(closed.isEmpty)
        await setup.agent.stop()
    }

    /// Sends `bytes` on a new connection, closes the writing side, and reads what comes back.
    func rawExchange(_ path: String, _ bytes: [UInt8]) async throws -> [UInt8] {
        try await offThePool {
            let client = try RawClient(path: path)
            defer { client.close() }
            client.send(bytes)
            client.finishSending()
            return client.readToEnd()
        }
    }
}
