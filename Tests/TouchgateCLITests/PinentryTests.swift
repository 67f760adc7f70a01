import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `pinentry-touchgate` under the real gpg-agent (a private GNUPGHOME whose
/// `pinentry-program` is the helper): `gpg --decrypt` and `pass show` get a key's
/// passphrase from the vault after a touch; a finger that does not match releases nothing.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PinentryTests {
    static let keyPassphrase = "gpg key passphrase 7"

    /// A private GNUPGHOME with a passphrase-protected key, and gpg-agent started by the
    /// test in the foreground (so the pinentry's prompts reach the finger), no passphrase cache.
    struct Keyring {
        let home: String
        let agent: BackgroundProgram
        let keygrips: [String]

        var environment: [String: String] { ["GNUPGHOME": home] }

        /// Stops the agent (it forks even with --no-detach: gpgconf reaches the one serving).
        func stop(rig: HelperRig) async throws {
            _ = try await rig.run("/usr/bin/gpgconf", ["--homedir", home, "--kill", "gpg-agent"])
            await agent.stop()
        }

        static func make(rig: HelperRig) async throws -> Keyring {
            for tool in ["/usr/bin/gpg", "/usr/bin/gpg-agent", "/usr/bin/gpgconf"] {
                try HelperRig.require(tool, package: "gnupg")
            }
            let home = rig.home.path("gnupg")
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try Data("""
                pinentry-program \(rig.bin)/pinentry-touchgate
                default-cache-ttl 0
                max-cache-ttl 0
                allow-loopback-pinentry

                """.utf8).write(to: URL(fileURLWithPath: home + "/gpg-agent.conf"))
            let environment = ["GNUPGHOME": home]
            let agent = try await BackgroundProgram("/usr/bin/gpg-agent", ["--homedir", home, "--daemon", "--no-detach"],
                                              environment: rig.environment.merging(environment) { $1 },
                                              finger: rig.vault.finger, forks: true)
            try await waitForSocket(home + "/S.gpg-agent")
            // The key is made with the passphrase given on a descriptor (loopback), as a script would.
            let made = try await rig.run("/usr/bin/gpg", ["--batch", "--pinentry-mode", "loopback", "--passphrase-fd", "0",
                                                          "--quick-gen-key", "Touchgate Test <test@example.invalid>",
                                                          "future-default", "default", "never"],
                                         extra: environment, stdin: Data((PinentryTests.keyPassphrase + "\n").utf8))
            try #require(made.status == 0, "gpg --quick-gen-key: \(made.stderrLines)")
            let listed = try await rig.run("/usr/bin/gpg", ["--batch", "--with-colons", "--with-keygrip", "-K"], extra: environment)
            let keygrips = listed.stdout.split(separator: "\n").filter { $0.hasPrefix("grp:") }
                .compactMap { $0.split(separator: ":", omittingEmptySubsequences: false).dropFirst(9).first.map(String.init) }
            try #require(keygrips.count == 2, "a primary key and an encryption subkey: \(listed.stdout)")
            return Keyring(home: home, agent: agent, keygrips: keygrips)
        }
    }

    @Test func gpgDecryptAndPassShowGetThePassphraseAfterATouch() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        try await rig.vault.enroll("whorl")
        try await rig.vault.add("gpg-test-key", Self.keyPassphrase, policy: "biometry-any", fresh: true)
        let keyring = try await Keyring.make(rig: rig)
        for grip in keyring.keygrips {
            let mapped = try await rig.vault.run(["pinentry", "map", grip, "gpg-test-key"])
            try #require(mapped.status == 0, "pinentry map: \(mapped.stderrLines)")
        }
        // Listed as a table for people, as fields with --json.
        let fields = try await rig.vault.run(["pinentry", "list", "--json"])
        let keys = fields.json?["keys"] as? [[String: Any]] ?? []
        #expect(Set(keys.compactMap { $0["keygrip"] as? String }) == Set(keyring.keygrips)
                && keys.allSatisfy { $0["item"] as? String == "gpg-test-key" }, "\(fields.stdout)")
        let listed = try await rig.vault.run(["pinentry", "list"])
        #expect(listed.stdout.hasPrefix("KEYGRIP") && keyring.keygrips.allSatisfy { listed.stdout.contains("\($0)  gpg-test-key") }
                && listed.stdout.contains("fallback: "), "\(listed.stdout)")

        let plain = rig.home.path("plain.txt"), sealed = rig.home.path("plain.txt.gpg")
        try Data("the plaintext\n".utf8).write(to: URL(fileURLWithPath: plain))
        let encrypted = try await rig.run("/usr/bin/gpg", ["--batch", "--trust-model", "always", "-e", "-r",
                                                           "test@example.invalid", "-o", sealed, plain],
                                          extra: keyring.environment)
        try #require(encrypted.status == 0, "gpg -e: \(encrypted.stderrLines)")

        // A finger that does not match: no passphrase, and no fallback pinentry to type one.
        let refused = try await rig.run("/usr/bin/gpg", ["--batch", "-d", sealed], extra: keyring.environment,
                                        presenting: ["arch"])
        #expect(refused.status != 0)
        #expect(!refused.stdout.contains("the plaintext"))
        #expect(rig.vault.finger.prompts == 1, "the agent's pinentry asked for one touch")

        // The enrolled finger: the agent gets the passphrase and gpg decrypts.
        let decrypted = try await rig.run("/usr/bin/gpg", ["--batch", "-d", sealed], extra: keyring.environment,
                                          presenting: ["whorl"])
        #expect(decrypted.status == 0, "\(decrypted.stderrLines)")
        #expect(decrypted.stdout == "the plaintext\n")
        #expect(rig.vault.finger.prompts == 1)

        // pass stores with the public key alone and shows after a touch.
        try HelperRig.require("/usr/bin/pass", package: "pass")
        let store = ["PASSWORD_STORE_DIR": rig.home.path("password-store")].merging(keyring.environment) { $1 }
        let initialized = try await rig.run("/usr/bin/pass", ["init", "test@example.invalid"], extra: store)
        try #require(initialized.status == 0, "pass init: \(initialized.stderrLines)")
        let inserted = try await rig.run("/usr/bin/pass", ["insert", "-e", "web/example"], extra: store,
                                         stdin: Data("pass-entry-value\n".utf8))
        try #require(inserted.status == 0, "pass insert: \(inserted.stderrLines)")
        let shown = try await rig.run("/usr/bin/pass", ["show", "web/example"], extra: store, presenting: ["whorl"])
        #expect(shown.status == 0, "\(shown.stderrLines)")
        #expect(shown.stdout == "pass-entry-value\n")
        #expect(rig.vault.finger.prompts == 1)

        // Each release names gpg-agent through pinentry-touchgate; the passphrase is in no record.
        let reads = try await rig.auditRecords(mentioning: "pinentry-touchgate for pid ")
            .filter { $0["event"] as? String == "item.read" }
        #expect(reads.filter { $0["outcome"] as? String == "success" }.count == 2, "\(reads)")
        #expect(reads.filter { $0["outcome"] as? String == "failure" }.count == 1, "\(reads)")
        #expect(reads.allSatisfy { ($0["reason"] as? String ?? "").contains("/usr/bin/gpg-agent") }, "\(reads)")
        #expect(!(try await rig.vault.run(["audit", "export"])).stdout.contains(Self.keyPassphrase))
        try await keyring.stop(rig: rig)
    }

    @Test func theAssuanConversationAnswersWhatAgentsAsk() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        // Percent-escaped arguments, GETINFO, unknown commands, an unmapped key without a fallback.
        let conversation = """
            OPTION allow-external-password-cache
            GETINFO flavor
            SETDESC Line one%0ALine two 100%25
            SETKEYINFO n/0123456789ABCDEF0123456789ABCDEF01234567
            GETPIN
            NOSUCHCOMMAND
            MESSAGE
            BYE

            """
        let served = try await rig.run(rig.bin + "/pinentry-touchgate", ["--display", ":0"], stdin: Data(conversation.utf8))
        #expect(served.status == 0, "\(served.stderrLines)")
        let lines = served.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("OK Pleased to meet you") == true, "\(lines)")
        #expect(lines.contains("D touchgate"))
        #expect(lines.contains { $0.hasPrefix("ERR 83886165 ") }, "no mapping and no fallback: no pinentry (\(lines))")
        #expect(lines.contains { $0.hasPrefix("ERR 83886355 ") }, "unknown command: \(lines)")
        #expect(lines.last == "OK closing connection")
    }

    @Test func anUnmappedKeyGoesToTheFallbackPinentryOnTheTerminal() async throws {
        try HelperRig.require("/usr/bin/pinentry-tty", package: "pinentry-tty")
        try HelperRig.require("/usr/bin/script", package: "bsdutils")
        let rig = try HelperRig()
        defer { rig.home.remove() }
        // Without a program it says what is set, so the person can check it before and after.
        let before = try await rig.vault.run(["pinentry", "fallback"])
        #expect(before.status == 0 && before.stdout.contains("fallback: none"), "\(before.stdout) \(before.stderrLines)")
        let set = try await rig.vault.run(["pinentry", "fallback", "/usr/bin/pinentry-tty"])
        try #require(set.status == 0, "\(set.stderrLines)")
        #expect(set.stdout.contains("fallback: /usr/bin/pinentry-tty"), "the change is confirmed: \(set.stdout)")
        let shown = try await rig.vault.run(["pinentry", "fallback", "--json"])
        #expect(shown.json?["fallback"] as? String == "/usr/bin/pinentry-tty", "\(shown.stdout)")
        // The agent's side, as gpg-agent speaks it for a key with no mapping, on a terminal
        // script(1) provides; the passphrase is typed there once pinentry-tty asks.
        let answers = rig.home.path("answers")
        let conversation = rig.home.path("conversation.sh")
        try Data("""
            #!/bin/sh
            printf 'OPTION ttyname=%s\\nOPTION ttytype=xterm\\nSETKEYINFO n/0123456789ABCDEF0123456789ABCDEF01234567\\nSETDESC Unlock%%0Athe key\\nSETPROMPT Passphrase:\\nGETPIN\\nBYE\\n' "$(tty)" | pinentry-touchgate > '\(answers)'

            """.utf8).write(to: URL(fileURLWithPath: conversation))
        chmod(conversation, 0o755)
        let typed = try await rig.run("/bin/sh", ["-c", "(sleep 3; printf 'typed at the terminal 100%%\\n'; sleep 2) | /usr/bin/script -q -e -c \"$1\" /dev/null",
                                                  "sh", conversation])
        #expect(typed.status == 0, "\(typed.stderrLines)")
        #expect(typed.stdout.contains("Unlock"), "pinentry-tty showed the description: \(typed.stdout)")
        let lines = try String(contentsOfFile: answers, encoding: .utf8).split(separator: "\n").map(String.init)
        // The fallback's answer came through, escaped as Assuan data.
        #expect(lines.contains("D typed at the terminal 100%25"), "\(lines)")
        #expect(!lines.contains("S PASSWORD_FROM_CACHE"))
        #expect(lines.last == "OK closing connection", "\(lines)")
    }

    @Test("a fallback that is not a pinentry, or one that cannot run, is named in a clear error and the agent gets an ERR")
    func aBrokenFallbackIsReported() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let conversation = "SETKEYINFO n/0123456789ABCDEF0123456789ABCDEF01234567\nGETPIN\nBYE\n"
        let notAPinentry = rig.home.path("not-a-pinentry")
        try Data("#!/bin/sh\necho hello\n".utf8).write(to: URL(fileURLWithPath: notAPinentry))
        chmod(notAPinentry, 0o755)
        for (program, says) in [(notAPinentry, "did not greet"), ("/bin/true", "did not greet")] {
            let set = try await rig.vault.run(["pinentry", "fallback", program])
            try #require(set.status == 0, "\(set.stderrLines)")
            let served = try await rig.run(rig.bin + "/pinentry-touchgate", [], stdin: Data(conversation.utf8))
            let lines = served.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("ERR ") }, "\(program): \(lines)")
            #expect(served.stderrLines.joined(separator: "\n").contains(says), "\(program): \(served.stderrLines)")
        }
        // Gone after it was set: the path is named with why it cannot run.
        let gone = rig.home.path("gone")
        try FileManager.default.copyItem(atPath: notAPinentry, toPath: gone)
        let set = try await rig.vault.run(["pinentry", "fallback", gone])
        try #require(set.status == 0, "\(set.stderrLines)")
        try FileManager.default.removeItem(atPath: gone)
        let served = try await rig.run(rig.bin + "/pinentry-touchgate", [], stdin: Data(conversation.utf8))
        #expect(served.stdout.split(separator: "\n").contains { $0.hasPrefix("ERR ") }, "\(served.stdout)")
        let said = served.stderrLines.joined(separator: "\n")
        #expect(said.contains("cannot run the fallback pinentry \(gone)") && said.contains("No such file"), "\(said)")
    }

    @Test("SIGTERM or SIGINT while a mapped key waits for a finger: the pinentry ends at once, answers cancelled, and starts no fallback")
    func aSignalWhileWaitingEndsItWithoutTheFallback() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        try await rig.vault.enroll("whorl")
        try await rig.vault.add("gpg-key", "k", policy: "biometry-any", fresh: true)
        let grip = "0123456789ABCDEF0123456789ABCDEF01234567"
        try #require(try await rig.vault.run(["pinentry", "map", grip, "gpg-key"]).status == 0)
        // A fallback that leaves a mark if it is ever started.
        let mark = rig.home.path("fallback-ran"), fallback = rig.home.path("fallback")
        try Data("#!/bin/sh\ntouch '\(mark)'\necho OK\nwhile read line; do echo OK; done\n".utf8)
            .write(to: URL(fileURLWithPath: fallback))
        chmod(fallback, 0o755)
        try #require(try await rig.vault.run(["pinentry", "fallback", fallback]).status == 0)
        for signal in [SIGTERM, SIGINT] {
            var process = CLIProcess(environment: rig.environment)
            process.binaryOverride = rig.bin + "/pinentry-touchgate"
            let started = Date()
            // No finger comes; the signal arrives once the reader waits.
            let served = try await process.run([], stdin: Data("SETKEYINFO n/\(grip)\nGETPIN\nBYE\n".utf8), timeout: 30) { line, running in
                if VirtualImageFinger.isPrompt(line) { kill(running.processIdentifier, signal) }
            }
            #expect(Date().timeIntervalSince(started) < 10, "signal \(signal): it ended at once")
            #expect(served.status != 137, "signal \(signal): not killed by the test's timeout: \(served.stderrLines)")
            #expect(!served.stdout.contains("OK closing connection"), "signal \(signal): it stopped serving: \(served.stdout)")
            #expect(served.stdout.contains("ERR 83886179 "), "signal \(signal): cancelled: \(served.stdout)")
            #expect(!FileManager.default.fileExists(atPath: mark), "signal \(signal): the fallback was started")
        }
        // Nobody touches before the reader's deadline: nobody may be at the terminal either, so
        // the fallback is not started there; the agent gets a timeout.
        var process = CLIProcess(environment: rig.environment.merging(["TOUCHGATE_FINGER_TIMEOUT": "1"]) { $1 })
        process.binaryOverride = rig.bin + "/pinentry-touchgate"
        let timedOut = try await process.run([], stdin: Data("SETKEYINFO n/\(grip)\nGETPIN\nBYE\n".utf8), timeout: 30)
        #expect(timedOut.stdout.contains("ERR 83886142 "), "\(timedOut.stdout) \(timedOut.stderrLines)")
        #expect(!FileManager.default.fileExists(atPath: mark), "the fallback was started after a timeout")
    }
}
