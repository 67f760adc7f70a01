import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate agent --secret-service` on a private session bus, with the real clients:
/// secret-tool (libsecret), python3-secretstorage with both session algorithms, and a
/// notification server (python3-dbusmock's) that shows what the person is asked.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct SecretServiceTests {
    /// A vault with whorl enrolled, the agent serving the Secret Service on the rig's bus.
    struct Setup {
        let rig: HelperRig
        let bus: NotificationRig
        let agent: BackgroundProgram
        let socket: String

        var busEnvironment: [String: String] { bus.environment }
        var serviceSocket: String { (socket as NSString).deletingLastPathComponent + "/socket" }

        /// Runs `body` with a new setup, and stops its processes after, whatever happened.
        static func run(_ body: (Setup) async throws -> Void) async throws {
            let setup = try await make()
            do {
                try await body(setup)
            } catch {
                setup.stop()
                throw error
            }
            setup.stop()
        }

        static func make() async throws -> Setup {
            for (tool, package) in [("/usr/bin/secret-tool", "libsecret-tools"), ("/usr/bin/python3", "python3")] {
                try HelperRig.require(tool, package: package)
            }
            let rig = try HelperRig()
            try await rig.vault.initAndUnlock()
            try await rig.vault.enroll("whorl")
            let bus = try await NotificationRig()
            let socket = rig.home.path("agent.sock")
            let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json", "--socket", socket,
                                                                             "--secret-service"],
                                                    environment: rig.environment.merging(bus.environment) { $1 },
                                                    finger: rig.vault.finger)
            try await waitForSocket(socket)
            let setup = Setup(rig: rig, bus: bus, agent: agent, socket: socket)
            try await setup.waitForName()
            return setup
        }

        func waitForName() async throws {
            for _ in 0..<100 {
                if agent.errorLines.contains(where: { $0.contains("serving the Secret Service") }) { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            Issue.record("the agent did not take org.freedesktop.secrets: \(agent.errorLines)")
            throw POSIXError(.ETIMEDOUT)
        }

        /// A client on the bus, presenting `prints` whenever the agent asks for a finger.
        func client(_ program: String, _ arguments: [String], stdin: String? = nil,
                    presenting prints: [String] = []) async throws -> CLIResult {
            rig.vault.finger.present(prints)
            return try await rig.run(program, arguments, extra: busEnvironment, stdin: stdin.map { Data($0.utf8) },
                                     presenting: prints)
        }

        func secretTool(_ arguments: [String], stdin: String? = nil, presenting prints: [String] = []) async throws -> CLIResult {
            try await client("/usr/bin/secret-tool", arguments, stdin: stdin, presenting: prints)
        }

        /// touchgate through the agent.
        func touchgate(_ arguments: [String], stdin: Data? = nil, presenting prints: [String] = []) async throws -> CLIResult {
            try await rig.run(rig.bin + "/touchgate", arguments, extra: ["TOUCHGATE_SOCKET": serviceSocket], stdin: stdin,
                              presenting: prints)
        }

        /// How many times the agent has asked for a finger so far.
        var fingerPrompts: Int { agent.errorLines.filter(VirtualImageFinger.isPrompt).count }

        func stop() {
            agent.stopNow()
            bus.stop()
            rig.home.remove()
        }
    }

    /// The python3-secretstorage clients in SecretServiceClients/.
    static func clientScript(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("SecretServiceClients/\(name)").path
    }

    /// What scenario.py observes with a provider that works as the specification says.
    static func expectedScenario(_ algorithm: String) -> [String: Any] {
        ["attributes": ["service": "scenario-\(algorithm)", "user": "alice"], "collection-locked": false,
         "content-type": "text/plain", "created-plausible": true, "first": "first value", "found-after-create": 1,
         "found-after-delete": 0, "found-after-replace": 1, "item-locked": false, "label": "Scenario \(algorithm)",
         "modified-plausible": true, "second": "second value"]
    }

    static func parsed(_ output: String) -> NSDictionary? {
        (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? NSDictionary
    }

    @Test("with no reuse window, the touch that unlocks an item for secret-tool gives it that one read, and the next read asks again")
    func noReuseWindowStillReadsOncePerTouch() async throws {
        try await Setup.run { setup in
            let strict = try await setup.touchgate(["policy", "set", "--passphrase-fd", "0", "--session-timeout", "0"],
                                                   stdin: VaultRig.lines(VaultRig.passphrase))
            try #require(strict.status == 0, "policy set: \(strict.stderrLines)")
            let stored = try await setup.secretTool(["store", "--label=Strict token", "service", "strict"], stdin: "one-touch")
            #expect(stored.status == 0, "secret-tool store: \(stored.stderrLines)")
            let before = setup.fingerPrompts
            let read = try await setup.secretTool(["lookup", "service", "strict"], presenting: ["whorl"])
            #expect(read.status == 0 && read.stdout == "one-touch", "secret-tool lookup: \(read.status) \(read.stderrLines)")
            #expect(setup.fingerPrompts == before + 1)
            // The touch was spent on that read: the next one asks again.
            let again = try await setup.secretTool(["lookup", "service", "strict"], presenting: ["whorl"])
            #expect(again.status == 0 && again.stdout == "one-touch", "\(again.stderrLines)")
            #expect(setup.fingerPrompts == before + 2, "\(setup.agent.errorLines)")
        }
    }

    @Test func secretToolStoresAndReadsThroughATouchThatNamesIt() async throws {
        try await Setup.run { setup in
            let stored = try await setup.secretTool(["store", "--label=GitHub token", "service", "github", "user", "bob"],
                                                    stdin: "s3cret-value")
            #expect(stored.status == 0, "secret-tool store: \(stored.stderrLines)")
            // The item is a vault item, under its label.
            let listed = try await setup.touchgate(["secret", "list", "--json"])
            #expect(listed.stdout.contains("GitHub token"), "\(listed.stdout)")

            // The first read by secret-tool needs a touch that names it.
            let before = setup.fingerPrompts
            let read = try await setup.secretTool(["lookup", "service", "github", "user", "bob"], presenting: ["whorl"])
            #expect(read.status == 0, "secret-tool lookup: \(read.stderrLines)")
            #expect(read.stdout == "s3cret-value")
            #expect(setup.fingerPrompts == before + 1)
            #expect(setup.agent.errorLines.contains { $0.contains("let secret-tool read 'GitHub token'") },
                    "the prompt names the program and the item: \(setup.agent.errorLines)")
            // The notification server was asked to show it, and told to withdraw it.
            let notices = setup.bus.calls("Notify")
            #expect(notices.contains { $0.contains("secret-tool") && $0.contains("GitHub token") }, "\(notices)")
            #expect(!setup.bus.calls("CloseNotification").isEmpty)

            // Inside the reuse window, secret-tool reads again without a touch.
            let again = try await setup.secretTool(["lookup", "service", "github", "user", "bob"])
            #expect(again.status == 0 && again.stdout == "s3cret-value", "\(again.stderrLines)")
            #expect(setup.fingerPrompts == before + 1)

            // Search shows the attributes; clear deletes it from the vault.
            let search = try await setup.secretTool(["search", "service", "github"])
            #expect(search.stdout.contains("attribute.user = bob") || search.stderrLines.joined().contains("attribute.user = bob"),
                    "\(search.stdout) \(search.stderrLines)")
            let cleared = try await setup.secretTool(["clear", "service", "github", "user", "bob"])
            #expect(cleared.status == 0, "\(cleared.stderrLines)")
            let gone = try await setup.secretTool(["lookup", "service", "github", "user", "bob"])
            #expect(gone.status != 0 && gone.stdout.isEmpty)
            let after = try await setup.touchgate(["secret", "list", "--json"])
            #expect(!after.stdout.contains("GitHub token"), "\(after.stdout)")
            // Every release names the program in the audit trail.
            let records = try await setup.rig.auditRecords(mentioning: "secret-tool")
            #expect(records.contains { ($0["event"] as? String) == "item.read" && ($0["outcome"] as? String) == "success" },
                    "\(records)")
        }
    }

    @Test func secretstorageWithBothSessionAlgorithms() async throws {
        try await Setup.run { setup in
            for algorithm in ["plain", "dh"] {
                let run = try await setup.client("/usr/bin/python3", [Self.clientScript("scenario.py"), algorithm],
                                                 presenting: ["whorl"])
                #expect(run.status == 0, "\(algorithm): \(run.stderrLines)")
                #expect(Self.parsed(run.stdout) == Self.expectedScenario(algorithm) as NSDictionary,
                        "\(algorithm): \(run.stdout)")
            }
        }
    }

    @Test func aSecondProgramNeedsATouchOfItsOwnOrAnAllowance() async throws {
        try await Setup.run { setup in
            let stored = try await setup.secretTool(["store", "--label=Mail", "service", "mail"], stdin: "mail-password")
            try #require(stored.status == 0, "\(stored.stderrLines)")
            let first = try await setup.secretTool(["lookup", "service", "mail"], presenting: ["whorl"])
            #expect(first.status == 0 && first.stdout == "mail-password", "\(first.stderrLines)")
            let prompts = setup.fingerPrompts

            // Python, another program, finds the item locked for it even inside secret-tool's
            // reuse window: a wrong finger leaves it locked, and nothing is released.
            let reader = Self.clientScript("read.py")
            let refused = try await setup.client("/usr/bin/python3", [reader, "service=mail"], presenting: ["arch"])
            #expect(refused.status == 1 && refused.stdout.isEmpty, "\(refused.status) \(refused.stderrLines)")
            #expect(setup.fingerPrompts > prompts)
            #expect(setup.agent.errorLines.contains { $0.contains("let python3") && $0.contains("read 'Mail'") },
                    "\(setup.agent.errorLines.suffix(10))")
            // The enrolled finger approves it.
            let approved = try await setup.client("/usr/bin/python3", [reader, "service=mail"], presenting: ["whorl"])
            #expect(approved.status == 0 && approved.stdout == "mail-password", "\(approved.stderrLines)")

            // Allowed for good, a program reads without a touch of its own (the reuse window
            // of the item's policy still applies: here it is open).
            let allowed = try await setup.touchgate(["secret", "allow", "Mail", "/bin/cat", "--json"], presenting: ["whorl"])
            #expect(allowed.status == 0, "\(allowed.stderrLines)")
            #expect(allowed.stdout.contains("/usr/bin/cat"), "links are resolved: \(allowed.stdout)")
            let revoked = try await setup.touchgate(["secret", "allow", "Mail", "/usr/bin/cat", "--revoke", "--json"],
                                                    presenting: ["whorl"])
            #expect(revoked.status == 0 && !revoked.stdout.contains("/usr/bin/cat"), "\(revoked.stdout) \(revoked.stderrLines)")
            // Not a Secret Service item: allow refuses and says why.
            let plain = try await setup.touchgate(["secret", "add", "plain", "--policy", "biometry-any"], stdin: Data("x".utf8))
            try #require(plain.status == 0, "\(plain.stderrLines)")
            let notOurs = try await setup.touchgate(["secret", "allow", "plain", "/usr/bin/cat"])
            #expect(notOurs.status == 64 && notOurs.stderrLines.joined().contains("not stored through the Secret Service"),
                    "\(notOurs.status) \(notOurs.stderrLines)")

            // Every refusal and release is in the audit trail with the program's chain.
            let records = try await setup.rig.auditRecords(mentioning: "python3")
            #expect(records.contains { ($0["outcome"] as? String) != "success" }, "\(records)")
            #expect(records.contains { ($0["event"] as? String) == "item.read" && ($0["outcome"] as? String) == "success" })
        }
    }

    @Test func hostileCallsGetErrorsAndTheProviderServesOn() async throws {
        try await Setup.run { setup in
            let stored = try await setup.secretTool(["store", "--label=Bank", "service", "bank"], stdin: "bank-pin")
            try #require(stored.status == 0, "\(stored.stderrLines)")
            let run = try await setup.client("/usr/bin/python3", [Self.clientScript("hostile.py")])
            try #require(run.status == 0, "\(run.stderrLines)")
            let results = try #require(Self.parsed(run.stdout) as? [String: String], "\(run.stdout)")
            let invalid = "org.freedesktop.DBus.Error.InvalidArgs"
            let expected: [String: String] = [
                "wrong-signature": invalid, "unknown-method": "org.freedesktop.DBus.Error.UnknownMethod",
                "unknown-algorithm": "org.freedesktop.DBus.Error.NotSupported", "dh-key-one": invalid,
                "dh-key-too-long": invalid, "dh-key-wrong-type": invalid,
                "no-such-item": "org.freedesktop.Secret.Error.NoSuchObject",
                "no-such-object": "org.freedesktop.Secret.Error.NoSuchObject",
                "foreign-session": "org.freedesktop.Secret.Error.NoSession", "huge-attributes": invalid,
                "huge-attribute-value": invalid, "attributes-not-a-dict": invalid,
                "secret-not-a-session": "org.freedesktop.Secret.Error.NoSession",
                "set-label": "org.freedesktop.DBus.Error.PropertyReadOnly",
                "foreign-prompt-dismiss": "org.freedesktop.Secret.Error.NoSuchObject", "no-interface-search": "ok",
                "closed-session": "org.freedesktop.Secret.Error.NoSession",
            ]
            #expect(results == expected)
            // Nothing was stored by any of it.
            let listed = try await setup.touchgate(["secret", "list", "--json"])
            #expect(!listed.stdout.contains("hostile") && listed.stdout.contains("Bank"), "\(listed.stdout)")

            // A client that starts a prompt and leaves: the touch is broken off, and the
            // provider serves the next client, whose touch is its own.
            let prompts = setup.fingerPrompts
            let abandoned = try await setup.client("/usr/bin/python3", [Self.clientScript("hostile.py"), "abandon", "service=bank"])
            #expect(abandoned.status == 0 && abandoned.stdout.contains("true"), "\(abandoned.stdout) \(abandoned.stderrLines)")
            try await Task.sleep(for: .seconds(1))
            let read = try await setup.secretTool(["lookup", "service", "bank"], presenting: ["whorl"])
            #expect(read.status == 0 && read.stdout == "bank-pin", "\(read.stderrLines) \(setup.agent.errorLines.suffix(6))")
            #expect(setup.fingerPrompts > prompts)
        }
    }

    /// Issue 45's attacks on an approval: secret-tool is approved for an item (its touch is
    /// remembered for the reuse window, and `secret allow` lets it read for good), then a
    /// python process tries to read the item passing as secret-tool. Each is asked for a
    /// touch of its own, which names why it is not taken for secret-tool; a stranger's finger
    /// releases nothing. secret-tool itself still reads without a touch.
    @Test func aProcessPassingAsAnApprovedProgramIsAsked() async throws {
        try HelperRig.require("/usr/bin/unshare", package: "util-linux")
        try await Setup.run { setup in
            let stored = try await setup.secretTool(["store", "--label=Deploy", "service", "deploy"], stdin: "deploy-key")
            try #require(stored.status == 0, "\(stored.stderrLines)")
            let approved = try await setup.secretTool(["lookup", "service", "deploy"], presenting: ["whorl"])
            try #require(approved.status == 0 && approved.stdout == "deploy-key", "\(approved.stderrLines)")
            let allowed = try await setup.touchgate(["secret", "allow", "Deploy", "/usr/bin/secret-tool"], presenting: ["whorl"])
            try #require(allowed.status == 0, "\(allowed.stderrLines)")

            // Fork and exec: the connection's pid runs secret-tool, its child asks.
            let reasons = ["late": "not held by the process the bus names", "early": "runs another program now",
                           "kept": "kept from before it started its program"]
            for mode in ["late", "early", "kept"] {
                let before = setup.fingerPrompts
                let said = setup.agent.errorLines.count
                let forked = try await setup.client("/usr/bin/python3", [Self.clientScript("forked.py"), mode, "service=deploy"],
                                                    presenting: ["arch"])
                #expect(forked.stdout.hasPrefix("locked") && !forked.stdout.contains("deploy-key"),
                        "\(mode): the child read what secret-tool was approved for: \(forked.stdout) \(forked.stderrLines)")
                #expect(setup.fingerPrompts > before, "\(mode): no touch was asked")
                #expect(setup.agent.errorLines.dropFirst(said).contains {
                    $0.contains("not plainly") && $0.contains(reasons[mode]!)
                }, "\(mode): the prompt says why: \(setup.agent.errorLines.dropFirst(said))")
            }
            // Three strangers' fingers locked the reader out; the passphrase lifts it.
            let lifted = try await setup.touchgate(["unlock", "--passphrase-fd", "0"], stdin: VaultRig.lines(VaultRig.passphrase))
            #expect(lifted.status == 0, "\(lifted.stderrLines)")

            // Another mount and user namespace, python bind-mounted over secret-tool's path.
            let before = setup.fingerPrompts
            let reader = Self.clientScript("read.py")
            let mounted = try await setup.client("/usr/bin/unshare", [
                "-Urm", "/bin/sh", "-c",
                "mount --bind /usr/bin/python3 /usr/bin/secret-tool && exec /usr/bin/secret-tool \"$0\" service=deploy", reader,
            ], presenting: ["arch"])
            #expect(mounted.status != 0 && !mounted.stdout.contains("deploy-key"),
                    "python over secret-tool's path read the item: \(mounted.stdout) \(mounted.stderrLines)")
            #expect(setup.fingerPrompts > before, "no touch was asked")
            #expect(setup.agent.errorLines.contains { $0.contains("not plainly secret-tool") && $0.contains("namespace") },
                    "the prompt says why: \(setup.agent.errorLines.suffix(8))")

            // The passphrase ends the reuse window (and lifts any lockout). The real secret-tool is taken for itself: the item's own
            // policy asks the finger, in the words of a plain release.
            let unlocked = try await setup.touchgate(["unlock", "--passphrase-fd", "0"], stdin: VaultRig.lines(VaultRig.passphrase))
            #expect(unlocked.status == 0, "\(unlocked.stderrLines)")
            let real = try await setup.secretTool(["lookup", "service", "deploy"], presenting: ["whorl"])
            #expect(real.status == 0 && real.stdout == "deploy-key", "\(real.stderrLines) \(setup.agent.errorLines.suffix(6))")
            let asked = setup.agent.errorLines.last { $0.contains("touch-needed") } ?? ""
            #expect(asked.contains("give 'Deploy' to secret-tool") && !asked.contains("not plainly"), "\(asked)")
            // Inside the reuse window that touch opened, it reads again without one.
            let prompts = setup.fingerPrompts
            let again = try await setup.secretTool(["lookup", "service", "deploy"])
            #expect(again.status == 0 && again.stdout == "deploy-key", "\(again.stderrLines)")
            #expect(setup.fingerPrompts == prompts)
            let records = try await setup.rig.auditRecords(mentioning: "not plainly secret-tool")
            #expect(!records.isEmpty && records.allSatisfy { ($0["outcome"] as? String) != "success" }, "\(records)")
        }
    }

    /// Issue 45: a program of the user that took org.freedesktop.secrets first made the
    /// provider blame "gnome-keyring or KWallet". It now names the program, and says that
    /// one that is no keyring may be posing as one.
    @Test func aSquatterOnTheNameIsNamedForWhatItIs() async throws {
        try HelperRig.require("/usr/bin/python3", package: "python3")
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let bus = try await NotificationRig()
        defer { bus.stop() }
        let squatter = try await BackgroundProgram("/usr/bin/python3", ["-m", "dbusmock", "--session", "org.freedesktop.secrets",
                                                                        "/org/freedesktop/secrets", "org.freedesktop.Secret.Service"],
                                                   environment: bus.environment, finger: nil)
        defer { squatter.stopNow() }
        var owned = false
        for _ in 0..<100 where !owned {
            let owner = try await runProgram("/usr/bin/gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus",
                                                                "--object-path", "/org/freedesktop/DBus", "--method",
                                                                "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.secrets"],
                                             environment: bus.environment)
            owned = owner.stdout.contains("true")
            if !owned { try await Task.sleep(for: .milliseconds(50)) }
        }
        try #require(owned, "python3-dbusmock did not take the name")
        let served = try await rig.run(rig.bin + "/touchgate", ["secret-service", "serve"], extra: bus.environment)
        #expect(served.status == 9, "\(served.status) \(served.stderrLines)")
        let said = served.stderrLines.joined(separator: " ")
        #expect(said.contains("/usr/bin/python3") && said.contains("posing as your keyring") && !said.contains("KWallet"),
                "\(said)")
    }

    @Test func aWrongFingerAndALockoutRefuse() async throws {
        try await Setup.run { setup in
            let stored = try await setup.secretTool(["store", "--label=Vpn", "service", "vpn"], stdin: "vpn-key")
            try #require(stored.status == 0, "\(stored.stderrLines)")
            // Wrong fingers until the lockout: each lookup is refused and releases nothing.
            var lockedOut = false
            for _ in 0..<8 where !lockedOut {
                let wrong = try await setup.secretTool(["lookup", "service", "vpn"], presenting: ["arch"])
                #expect(wrong.stdout.isEmpty, "a wrong finger released the value")
                let status = try await setup.touchgate(["status", "--json"])
                lockedOut = ((status.json?["lockout"] as? [String: Any])?["locked-out"] as? Bool) == true
            }
            #expect(lockedOut, "no lockout after wrong fingers: \(setup.agent.errorLines.suffix(8))")
            // Locked out, even the enrolled finger is refused, before any reader opens.
            let prompts = setup.fingerPrompts
            let refused = try await setup.secretTool(["lookup", "service", "vpn"], presenting: ["whorl"])
            #expect(refused.stdout.isEmpty)
            #expect(setup.fingerPrompts == prompts)
            #expect(setup.agent.errorLines.contains { $0.contains("Too many failed fingerprint attempts") },
                    "\(setup.agent.errorLines.suffix(6))")
            // The person sees the refusal too, not only the prompt.
            #expect(setup.bus.calls("Notify").contains { $0.contains("Too many failed fingerprint attempts") },
                    "\(setup.bus.calls("Notify").suffix(3))")
        }
    }

    /// git-credential-libsecret, built from the source Debian's git package carries.
    static func buildGitCredentialLibsecret(into directory: String) async throws -> String {
        let source = "/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c"
        try #require(FileManager.default.fileExists(atPath: source), "this test builds \(source): apt-get install git")
        let flags = try await runProgram("/usr/bin/pkg-config", ["--cflags", "--libs", "libsecret-1", "glib-2.0"])
        try #require(flags.status == 0, "this test builds git-credential-libsecret: apt-get install libsecret-1-dev pkg-config")
        let output = directory + "/git-credential-libsecret"
        let built = try await runProgram("/usr/bin/cc", ["-O1", "-o", output, source]
                                         + flags.stdout.split(whereSeparator: \.isWhitespace).map(String.init))
        try #require(built.status == 0, "building git-credential-libsecret: \(built.stderr)")
        return output
    }

    @Test func pythonKeyringAndGitCredentialLibsecret() async throws {
        try await Setup.run { setup in
            // Python's keyring, through its SecretService backend (python3-keyring).
            let script = """
                import keyring, keyring.backends.SecretService, sys
                keyring.set_keyring(keyring.backends.SecretService.Keyring())
                if sys.argv[1] == "set":
                    keyring.set_password("touchgate-test", "carol", "keyring-secret")
                elif sys.argv[1] == "get":
                    print(keyring.get_password("touchgate-test", "carol"))
                else:
                    keyring.delete_password("touchgate-test", "carol")
                """
            let set = try await setup.client("/usr/bin/python3", ["-c", script, "set"], presenting: ["whorl"])
            #expect(set.status == 0, "keyring set: \(set.stderrLines)")
            let got = try await setup.client("/usr/bin/python3", ["-c", script, "get"], presenting: ["whorl"])
            #expect(got.status == 0 && got.stdout == "keyring-secret\n", "keyring get: \(got.stdout) \(got.stderrLines)")
            let deleted = try await setup.client("/usr/bin/python3", ["-c", script, "delete"], presenting: ["whorl"])
            #expect(deleted.status == 0, "keyring delete: \(deleted.stderrLines)")
            let none = try await setup.client("/usr/bin/python3", ["-c", script, "get"])
            #expect(none.stdout == "None\n", "\(none.stdout) \(none.stderrLines)")

            // git's libsecret helper: store, get (one touch), erase.
            let helper = try await Self.buildGitCredentialLibsecret(into: setup.rig.home.path("bin"))
            let credential = "protocol=https\nhost=git.example.com\nusername=dave\n"
            let stored = try await setup.client(helper, ["store"], stdin: credential + "password=git-secret\n\n")
            #expect(stored.status == 0, "store: \(stored.stderrLines)")
            let prompts = setup.fingerPrompts
            let fetched = try await setup.client(helper, ["get"], stdin: credential + "\n", presenting: ["whorl"])
            #expect(fetched.status == 0 && fetched.stdout.contains("password=git-secret"), "get: \(fetched.stdout) \(fetched.stderrLines)")
            #expect(setup.fingerPrompts == prompts + 1, "the helper's first read needed its own touch")
            #expect(setup.agent.errorLines.contains { $0.contains("let git-credential-libsecret read") })
            let erased = try await setup.client(helper, ["erase"], stdin: credential + "\n")
            #expect(erased.status == 0, "erase: \(erased.stderrLines)")
            let gone = try await setup.client(helper, ["get"], stdin: credential + "\n")
            #expect(!gone.stdout.contains("git-secret"))
        }
    }

    /// gnome-keyring-daemon (secrets only) on `bus`, its login keyring made under a known
    /// password and left unlocked, as after a desktop login.
    final class UnlockedKeyring: Sendable {
        let process: BackgroundProcess
        let home: String

        init(bus: NotificationRig) async throws {
            try HelperRig.require("/usr/bin/gnome-keyring-daemon", package: "gnome-keyring")
            home = bus.directory.path("keyring-home")
            try FileManager.default.createDirectory(atPath: home + "/run", withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            // A system bus that does not exist: the daemon must touch none of the machine's buses.
            let environment = ["HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config",
                               "XDG_RUNTIME_DIR": home + "/run", "DBUS_SESSION_BUS_ADDRESS": bus.busAddress,
                               "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(home)/no-system-bus", "PATH": "/usr/bin:/bin"]
            // --unlock reads the password until end of input, and makes the login keyring with it.
            process = try await BackgroundProcess.start(
                "/bin/sh", ["-c", "printf %s keyring-password | exec /usr/bin/gnome-keyring-daemon --unlock "
                            + "--components=secrets --foreground"],
                environment: environment, ownGroup: true)
            for _ in 0..<200 {
                let answer = try await runProgram("/usr/bin/gdbus", ["call", "--address", bus.busAddress, "--dest",
                                                                     "org.freedesktop.secrets", "--object-path",
                                                                     "/org/freedesktop/secrets/collection/login", "--method",
                                                                     "org.freedesktop.DBus.Properties.Get",
                                                                     "org.freedesktop.Secret.Collection", "Locked"])
                if answer.stdout.contains("<false>") { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            await process.terminate()
            Issue.record("gnome-keyring-daemon did not serve an unlocked login keyring within 10 s")
            throw POSIXError(.ETIMEDOUT)
        }

        func stop() { process.stop() }
    }

    @Test func importFromGnomeKeyringThenServeTheSameClients() async throws {
        let rig = try HelperRig()
        try await rig.vault.initAndUnlock()
        try await rig.vault.enroll("whorl")
        let bus = try await NotificationRig()
        var keyring: UnlockedKeyring? = try await UnlockedKeyring(bus: bus)
        defer {
            keyring?.stop()
            bus.stop()
            rig.home.remove()
        }
        let busEnvironment = rig.environment.merging(bus.environment) { $1 }
        func client(_ program: String, _ arguments: [String], stdin: String? = nil,
                    presenting prints: [String] = []) async throws -> CLIResult {
            try await rig.run(program, arguments, extra: bus.environment, stdin: stdin.map { Data($0.utf8) },
                              presenting: prints)
        }
        // The same client script against gnome-keyring: what it observes is what the
        // specification says, and what Touchgate must give (below).
        var reference: [String: NSDictionary] = [:]
        for algorithm in ["plain", "dh"] {
            let run = try await client("/usr/bin/python3", [Self.clientScript("scenario.py"), algorithm])
            #expect(run.status == 0, "gnome-keyring, \(algorithm): \(run.stderrLines)")
            reference[algorithm] = Self.parsed(run.stdout)
            #expect(reference[algorithm] == Self.expectedScenario(algorithm) as NSDictionary, "\(run.stdout)")
        }
        for (label, service, value) in [("Work mail", "imap", "imap-pass"), ("Chat", "matrix", "chat-token"),
                                        ("Wi-Fi", "nm", "wpa-psk")] {
            let stored = try await client("/usr/bin/secret-tool", ["store", "--label=\(label)", "service", service], stdin: value)
            try #require(stored.status == 0, "gnome-keyring store: \(stored.stderrLines)")
        }

        // Import: a wrong finger imports nothing; the enrolled one imports all three.
        let touchgate = rig.bin + "/touchgate"
        let dry = try await rig.run(touchgate, ["import", "secret-service", "--dry-run", "--json"], extra: bus.environment)
        #expect(dry.status == 0 && dry.stdout.contains("Work mail"), "\(dry.stdout) \(dry.stderrLines)")
        let refused = try await rig.run(touchgate, ["import", "secret-service", "--json"], extra: bus.environment,
                                        presenting: ["arch"])
        #expect(refused.status != 0)
        let none = try await rig.vault.run(["secret", "list", "--json"])
        #expect(!none.stdout.contains("Chat") && !none.stdout.contains("Wi-Fi"), "a refused import stored: \(none.stdout)")
        let imported = try await rig.run(touchgate, ["import", "secret-service", "--json"], extra: bus.environment,
                                         presenting: ["whorl"])
        #expect(imported.status == 0, "\(imported.stderrLines)")
        let report = try #require(imported.json)
        #expect((report["imported"] as? [String])?.sorted() == ["Chat", "Wi-Fi", "Work mail"], "\(report)")
        let again = try await rig.run(touchgate, ["import", "secret-service", "--json"], extra: bus.environment)
        #expect(again.status == 0 && (again.json?["skipped"] as? [String])?.count == 3, "\(again.stdout) \(again.stderrLines)")
        let records = try await rig.auditRecords(mentioning: "imported from the Secret Service")
        #expect(records.count == 3)

        // gnome-keyring stops; Touchgate takes the name on the same bus and serves the imported items.
        keyring?.stop()
        keyring = nil
        let socket = rig.home.path("agent.sock")
        let agent = try await BackgroundProgram(touchgate, ["agent", "--json", "--socket", socket, "--secret-service"],
                                                environment: busEnvironment, finger: rig.vault.finger)
        defer { agent.stopNow() }
        try await waitForSocket(socket)
        for _ in 0..<100 where !agent.errorLines.contains(where: { $0.contains("serving the Secret Service") }) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let chat = try await client("/usr/bin/secret-tool", ["lookup", "service", "matrix"], presenting: ["whorl"])
        #expect(chat.status == 0 && chat.stdout == "chat-token", "\(chat.stderrLines) \(agent.errorLines.suffix(5))")
        // The differential: the same script, the same observations.
        for algorithm in ["plain", "dh"] {
            let run = try await client("/usr/bin/python3", [Self.clientScript("scenario.py"), algorithm],
                                       presenting: ["whorl"])
            #expect(run.status == 0, "touchgate, \(algorithm): \(run.stderrLines)")
            #expect(Self.parsed(run.stdout) == reference[algorithm], "\(algorithm): \(run.stdout)")
        }
    }

    @Test func enableLetsDBusStartTheProviderAndDisableUndoesIt() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        let touchgate = rig.bin + "/touchgate"
        let enabled = try await rig.run(touchgate, ["secret-service", "enable", "--json"])
        #expect(enabled.status == 0, "\(enabled.stderrLines)")
        let file = try #require(enabled.json?["file"] as? String)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.contains("Name=org.freedesktop.secrets") && text.contains("secret-service serve"), "\(text)")

        // A session bus that reads the user's service files (and not the system's, where
        // gnome-keyring's is): the first client starts Touchgate's provider.
        let socket = rig.home.path("session.socket")
        let configuration = rig.home.path("session.conf")
        try FprintdRig.busConfiguration(socket: socket, type: "session", activation: true)
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        var environment = rig.environment
        environment["XDG_DATA_DIRS"] = rig.home.path("no-system-data")
        let bus = try await BackgroundProgram("/usr/bin/dbus-daemon", ["--config-file=\(configuration)", "--nofork"],
                                              environment: environment, finger: nil)
        defer { bus.stopNow() }
        try await waitForSocket(socket)
        let address = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(socket)"]
        let stored = try await rig.run("/usr/bin/secret-tool", ["store", "--label=Activated", "service", "activation"],
                                       extra: address, stdin: Data("started-by-dbus".utf8))
        #expect(stored.status == 0, "\(stored.stderrLines)")
        let listed = try await rig.vault.run(["secret", "list", "--json"])
        #expect(listed.stdout.contains("Activated"), "\(listed.stdout)")

        // disable removes only Touchgate's file; enable does not overwrite another's.
        let disabled = try await rig.run(touchgate, ["secret-service", "disable"])
        #expect(disabled.status == 0 && !FileManager.default.fileExists(atPath: file), "\(disabled.stderrLines)")
        try "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/usr/bin/other-keyring\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let refused = try await rig.run(touchgate, ["secret-service", "enable"])
        #expect(refused.status == 9, "\(refused.status) \(refused.stderrLines)")
        let kept = try await rig.run(touchgate, ["secret-service", "disable"])
        #expect(kept.status == 11 && FileManager.default.fileExists(atPath: file), "\(kept.status) \(kept.stderrLines)")
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("other-keyring"))
    }
}
