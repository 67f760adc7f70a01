import Foundation
import Testing
import TouchgateTestSupport

/// AI coding agents' door: `touchgate run`, `touchgate approve` and `touchgate receipt
/// verify` driven as built, in the personal mode and through touchgated, on a terminal and
/// without one. (`touchgate mcp` with the MCP Python SDK as its client: MCPServerTests.)
@Suite(.serialized, .timeLimit(.minutes(6)))
struct AgentDoorTests {
    /// A value with characters every encoding changes.
    static let value = "ghp_S3cr3t/Tok\"en+Value=0123456789abcdef"

    /// Every form of ``value`` the output must not carry: as it is, base64 at each of the
    /// three alignments (standard and URL alphabets), hex in both cases, URL-encoded, JSON-escaped.
    static var forms: [String] {
        let bytes = Array(value.utf8)
        var forms = [value]
        for offset in 0..<3 {
            let padded = Data([UInt8](repeating: 0x41, count: offset) + bytes)
            let encoded = padded.base64EncodedString()
            let start = encoded.index(encoded.startIndex, offsetBy: (offset * 8 + 5) / 6)
            let core = String(encoded[start...].prefix((offset + bytes.count) * 8 / 6 - (offset * 8 + 5) / 6))
            forms.append(core)
            forms.append(core.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))
        }
        forms.append(bytes.map { String(format: "%02x", $0) }.joined())
        forms.append(bytes.map { String(format: "%02X", $0) }.joined())
        forms.append(value.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        forms.append(value.replacingOccurrences(of: "\"", with: "\\\""))
        return forms
    }

    /// A shell script that prints the value every way a command might: as it is, in its
    /// environment, encoded, inside longer text, and split across writes.
    static let leaky = """
        echo "raw: $GH"; env | grep GH; printf %s "$GH" | base64; printf 'x%s' "$GH" | base64; \
        printf 'xy%s' "$GH" | base64 -w0 | tr '+/' '-_'; echo; printf %s "$GH" | od -An -tx1 | tr -d ' \\n'; echo; \
        printf %s "$GH" | od -An -tx1 | tr -d ' \\n' | tr a-f A-F; echo; \
        python3 -c 'import json,os,urllib.parse; print(json.dumps(os.environ["GH"])); print(urllib.parse.quote(os.environ["GH"], safe=""))'; \
        printf '%s' "${GH%%Value*}"; sleep 0.2; printf '%s\\n' "Value${GH#*Value}"; echo done > "$MARK"
        """

    static func leaks(_ text: String) -> [String] { forms.filter { text.contains($0) } }

    /// A personal vault, unlocked, whorl enrolled as right-index, and (with `token`) ``value``
    /// stored as `gh-token` under `biometry-any`. The caller removes its home.
    static func vault(token: Bool = true) async throws -> VaultRig {
        let vault = try VaultRig()
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        if token { try await vault.add("gh-token", value, policy: "biometry-any") }
        return vault
    }

    @Test("touchgate run: one touch runs the command, no encoding of the value comes back, the receipt verifies offline")
    func runFiltersAndSigns() async throws {
        let vault = try await Self.vault()
        defer { vault.home.remove() }
        let mark = vault.home.path("ran")
        let receipt = vault.home.path("receipt.json")
        var process = vault.rig.process
        process.environment["MARK"] = mark
        vault.finger.present(["whorl"])
        let finger = vault.finger
        let ran = try await process.run(["run", "--secret", "GH=gh-token", "--reason", "list my pull requests",
                                         "--receipt", receipt, "--", "/bin/sh", "-c", Self.leaky]) { line, _ in finger.handle(line) }
        #expect(ran.status == 0, "\(ran.stderrLines)")
        #expect(FileManager.default.fileExists(atPath: mark), "the command ran")
        #expect(Self.leaks(ran.stdout + ran.stderrLines.joined(separator: "\n")).isEmpty,
                "no form of the value comes back: \(Self.leaks(ran.stdout))\n\(ran.stdout)")
        #expect(ran.stdout.contains("raw: [GH hidden]") && ran.stdout.contains("GH=[GH hidden]"), "\(ran.stdout)")
        #expect(ran.stdout.components(separatedBy: "[GH hidden]").count >= 9, "every encoding replaced: \(ran.stdout)")
        #expect(ran.stdout.contains("\(Self.value.prefix(24))") == false)
        #expect(ran.fingerPrompts == 1, "\(ran.stderrLines)")
        let shown = ran.stderrLines.joined(separator: "\n")
        #expect(shown.contains("command:   /bin/sh -c") && shown.contains("secrets:   GH=gh-token")
                && shown.contains("reason:    list my pull requests") && shown.contains("asked by:"), "\(shown)")

        // The receipt verifies against the key the host publishes, offline.
        let key = try await vault.run(["audit", "public-key"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let verified = try await vault.run(["receipt", "verify", receipt, "--public-key", key, "--json"])
        #expect(verified.status == 0, "\(verified.stderrLines)")
        let statement = try #require((verified.json?["statement"] as? [String: Any]))
        #expect(statement["decision"] as? String == "approved" && statement["secrets"] as? [String] == ["GH=gh-token"])
        #expect((statement["match"] as? String)?.contains("right-index") == true, "\(statement)")
        #expect(!(try String(contentsOfFile: receipt, encoding: .utf8)).contains(Self.value))
        // Changed by one byte, or checked against another key or digest: not valid.
        let original = try String(contentsOfFile: receipt, encoding: .utf8)
        let forged = vault.home.path("forged.json")
        try original.replacingOccurrences(of: "list my pull requests", with: "list my pull requestz")
            .write(toFile: forged, atomically: true, encoding: .utf8)
        #expect(try await vault.run(["receipt", "verify", forged, "--public-key", key]).status == 6)
        #expect(try await vault.run(["receipt", "verify", receipt, "--public-key", String(repeating: "ab", count: 32)]).status == 6)
        #expect(try await vault.run(["receipt", "verify", receipt, "--public-key", key, "--digest", String(repeating: "0", count: 64)]).status == 6)
        let digest = try #require(statement["digest"] as? String)
        #expect(try await vault.run(["receipt", "verify", receipt, "--digest", digest]).status == 0, "the host's own key by default")

        // The trail records the decision with the digest.
        let trail = try await vault.auditTrail()
        #expect(trail.contains { ($0["reason"] as? String)?.contains("approval \(digest)") == true && $0["outcome"] as? String == "success" },
                "\(trail.suffix(3))")
        #expect(!(try await vault.run(["audit", "export"]).stdout.contains(Self.value)))
    }

    @Test("touchgate run: a wrong finger runs nothing and signs a refusal; a lockout refuses before any prompt; bad input changes nothing")
    func refusalsRunNothing() async throws {
        let vault = try await Self.vault()
        defer { vault.home.remove() }
        let mark = vault.home.path("ran")
        let receipt = vault.home.path("refused.json")
        let wrong = try await vault.run(["run", "--secret", "GH=gh-token", "--receipt", receipt, "--",
                                         "/bin/sh", "-c", "echo ran > \(mark)"], presenting: ["arch"])
        #expect(wrong.status == 1, "no match: \(wrong.stderrLines)")
        #expect(!FileManager.default.fileExists(atPath: mark), "nothing ran")
        let checked = try await vault.run(["receipt", "verify", receipt, "--json"])
        #expect(checked.status == 11, "a valid receipt of a refusal: \(checked.stderrLines)")
        #expect((checked.json?["statement"] as? [String: Any])?["decision"] as? String == "refused")
        #expect(checked.json?["valid"] as? Bool == true && checked.json?["approved"] as? Bool == false, "\(checked.stdout)")

        // Usage errors before anything is asked.
        #expect(try await vault.run(["run", "--secret", "GH", "--", "true"]).status == 64)
        #expect(try await vault.run(["run", "--secret", "GH=gh-token"]).status == 64)
        #expect(try await vault.run(["run", "--secret", "GH=gh-token", "--receipt", receipt, "--", "true"]).status == 64,
                "an existing receipt file is not overwritten")
        #expect(try await vault.run(["run", "--secret", "GH=nothing", "--", "true"]).status == 10)
        let missing = try await vault.run(["run", "--secret", "GH=gh-token", "--", "/nonexistent/tool"], presenting: ["whorl"])
        #expect(missing.status == 127, "\(missing.stderrLines)")

        // Three wrong touches in a row lock out (the run above matched); then a run is refused at once, with no prompt.
        for _ in 0..<3 { _ = try await vault.run(["verify"], presenting: ["arch"]) }
        let locked = try await vault.run(["run", "--secret", "GH=gh-token", "--", "/bin/sh", "-c", "echo ran > \(mark)"])
        #expect(locked.status == 7, "\(locked.stderrLines)")
        #expect(locked.fingerPrompts == 0)
        #expect(!FileManager.default.fileExists(atPath: mark))
    }

    /// What an attacker's review found: each kept as a test.
    @Test("the program shown is the one that runs; no secrets still runs; no passphrase is asked; Ctrl-C reaches the command; a daemon it leaves does not hold the run")
    func whatRunsIsWhatWasShown() async throws {
        let vault = try await Self.vault()
        defer { vault.home.remove() }
        // A name is found in PATH before the touch, shown and bound as a path; the loader's
        // preloads and the shells' start-up files are not passed on.
        var process = vault.rig.process
        process.environment["LD_PRELOAD"] = "/nonexistent/preload.so"
        process.environment["BASH_ENV"] = "/nonexistent/bashrc"
        vault.finger.present(["whorl"])
        let finger = vault.finger
        let shown = try await process.run(["run", "--secret", "GH=gh-token", "--", "sh", "-c",
                                           "echo \"pre=${LD_PRELOAD:-none} env=${BASH_ENV:-none}\""]) { line, _ in finger.handle(line) }
        #expect(shown.status == 0 && shown.stdout.contains("pre=none env=none"), "\(shown.stdout)\(shown.stderrLines)")
        #expect(shown.stderrLines.contains { $0.hasPrefix("command:   /") && $0.contains("/sh -c") }, "\(shown.stderrLines)")
        let missing = try await vault.run(["run", "--", "no-such-program-anywhere"])
        #expect(missing.status == 127 && missing.fingerPrompts == 0, "found missing before anything is asked: \(missing.stderrLines)")

        // No secrets: approved, then run.
        let plain = try await vault.run(["run", "--", "/bin/echo", "approved and ran"], presenting: ["whorl"])
        #expect(plain.status == 0 && plain.stdout.contains("approved and ran"), "\(plain.stderrLines)")

        // An item that also wants the passphrase: refused, and no passphrase asked where an agent could read it.
        try await vault.add("both", "both-value-0123456789", policy: "biometry-any&passphrase", fresh: true)
        let both = try await vault.run(["run", "--secret", "B=both", "--", "/bin/true"], presenting: ["whorl"],
                                       stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(both.status == 8 && both.stderrLines.joined().contains("never a passphrase"), "\(both.stderrLines)")

        // A program the command leaves behind holding its output does not hold the run.
        let started = Date()
        let left = try await vault.run(["run", "--", "/bin/sh", "-c", "sleep 30 & echo left"], presenting: ["whorl"])
        #expect(left.status == 0 && left.stdout.contains("left") && Date().timeIntervalSince(started) < 15,
                "\(Date().timeIntervalSince(started)) s")

        // SIGTERM to touchgate run (as Ctrl-C would) reaches the command.
        vault.finger.present(["whorl"])
        let pidFile = vault.home.path("child.pid")
        let cancelled = try await vault.rig.process.run(["run", "--", "/bin/sh", "-c", "echo $$ > \(pidFile); echo started >&2; exec sleep 30"]) {
            line, running in
            finger.handle(line)
            if line == "started" { kill(running.processIdentifier, SIGTERM) }
        }
        #expect(cancelled.status != 0, "\(cancelled.stderrLines)")
        let child = Int32((try? String(contentsOfFile: pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        var gone = false
        for _ in 0..<40 where !gone {
            gone = child > 0 && kill(child, 0) != 0
            if !gone { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(gone, "the command (pid \(child)) ended with touchgate run")
    }

    @Test("--secret-file: the value in a sealed file in memory, its path in the variable, its contents filtered from the output")
    func secretAsAFile() async throws {
        let vault = try await Self.vault()
        defer { vault.home.remove() }
        let script = #"echo "path $K"; cat "$K"; echo; readlink /proc/self/fd/3; (echo x >> "$K") 2>/dev/null || echo "cannot write"; env | grep -c ghp_ || true"#
        let ran = try await vault.run(["run", "--secret-file", "K=gh-token", "--", "/bin/sh", "-c", script], presenting: ["whorl"])
        #expect(ran.status == 0, "\(ran.stderrLines)")
        let lines = ran.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "path /dev/fd/3" && lines.dropFirst().first == "[K hidden]", "\(ran.stdout)")
        #expect(ran.stdout.contains("memfd:touchgate-secret") && ran.stdout.contains("cannot write"), "in memory, sealed: \(ran.stdout)")
        #expect(lines.last == "0", "the value is in no environment variable: \(ran.stdout)")
        #expect(Self.leaks(ran.stdout).isEmpty)
        #expect(ran.stderrLines.joined().contains("K=gh-token (a file)"), "the prompt says it is a file")
    }

    @Test("a run lease, when set, lets the same run from the same processes skip the touch; never another's, never a --fresh item, never after lock")
    func runLease() async throws {
        let vault = try await Self.vault()
        defer { vault.home.remove() }
        try await vault.add("deploy-key", "deploy-value-0123456789", policy: "biometry-any", fresh: true)
        let command = ["run", "--secret", "GH=gh-token", "--", "/bin/sh", "-c", "echo \"token $GH\""]
        // Off by default: the same run twice is two touches.
        for _ in 0..<2 {
            let ran = try await vault.run(command, presenting: ["whorl"])
            #expect(ran.status == 0 && ran.fingerPrompts == 1, "\(ran.stderrLines)")
        }
        #expect(try await vault.run(["policy", "set", "--run-lease", "901"], stdin: VaultRig.lines(VaultRig.passphrase)).status == 64)
        let set = try await vault.withPassphrase(["policy", "set", "--run-lease", "120", "--json"])
        #expect(set.status == 0 && (set.json?["run-lease-seconds"] as? Int) == 120, "\(set.stdout)\(set.stderrLines)")
        let first = try await vault.run(command, presenting: ["whorl"])
        let again = try await vault.run(command)
        #expect(first.fingerPrompts == 1 && again.status == 0 && again.fingerPrompts == 0, "\(again.stderrLines)")
        #expect(again.stdout.contains("token [GH hidden]"))
        // Another command, or the same one asked by another process (a shell in between): a touch.
        let other = try await vault.run(["run", "--secret", "GH=gh-token", "--", "/bin/echo", "other"], presenting: ["whorl"])
        #expect(other.fingerPrompts == 1, "\(other.stderrLines)")
        var viaShell = vault.rig.process
        viaShell.wrapper = ["/bin/sh", "-c", "\"$@\"; exit $?", "sh"]
        vault.finger.present(["whorl"])
        let finger = vault.finger
        let shelled = try await viaShell.run(command) { line, _ in finger.handle(line) }
        #expect(shelled.status == 0 && shelled.fingerPrompts == 1, "\(shelled.stderrLines)")
        // An item stored --fresh is never leased.
        let fresh = ["run", "--secret", "K=deploy-key", "--", "/bin/true"]
        _ = try await vault.run(fresh, presenting: ["whorl"])
        #expect(try await vault.run(fresh, presenting: ["whorl"]).fingerPrompts == 1)
        // Locking ends every lease.
        #expect(try await vault.run(["lock"]).status == 0)
        try #require(try await vault.withPassphrase(["unlock"]).status == 0)
        let afterLock = try await vault.run(command, presenting: ["whorl"])
        #expect(afterLock.fingerPrompts == 1, "\(afterLock.stderrLines)")
        let trail = try await vault.auditTrail()
        #expect(trail.contains { ($0["reason"] as? String)?.contains("the lease of the touch") == true }, "the lease's use is recorded")
    }

    @Test("touchgate approve --hook: a pre-tool hook's JSON in, allow after a touch and deny after a wrong finger")
    func hookApproves() async throws {
        let vault = try await Self.vault(token: false)
        defer { vault.home.remove() }
        let input = Data(#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force"},"cwd":"/srv/repo"}"#.utf8)
        let allowed = try await vault.run(["approve", "--hook"], presenting: ["whorl"], stdin: input)
        #expect(allowed.status == 0, "\(allowed.stderrLines)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(allowed.stdout.utf8)) as? [String: Any])
        let output = try #require(answer["hookSpecificOutput"] as? [String: Any])
        #expect(output["permissionDecision"] as? String == "allow" && output["hookEventName"] as? String == "PreToolUse")
        #expect(allowed.stderrLines.joined().contains("git push --force"), "the person sees the tool's input")
        let denied = try await vault.run(["approve", "--hook"], presenting: ["arch"], stdin: input)
        #expect(denied.status == 2, "\(denied.stderrLines)")
        #expect(denied.stdout.contains("\"deny\""))
        #expect(try await vault.run(["approve", "--hook"], stdin: Data("not json".utf8)).status == 64)
        // The same action by the same process chain binds to the same digest; changed arguments to another.
        let first = try await vault.run(["approve", "--action", "deploy", "--arguments", #"{"env":"prod"}"#], presenting: ["whorl"])
        let second = try await vault.run(["approve", "--action", "deploy", "--arguments", #"{"env":"prod"}"#], presenting: ["whorl"])
        let changed = try await vault.run(["approve", "--action", "deploy", "--arguments", #"{"env":"staging"}"#], presenting: ["whorl"])
        func digest(_ result: CLIResult) throws -> String {
            let receipt = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let statement = try #require(receipt["statement"] as? String)
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(statement.utf8)) as? [String: Any])
            return try #require(fields["digest"] as? String)
        }
        #expect(first.status == 0 && second.status == 0 && changed.status == 0, "\(changed.stderrLines)")
        #expect(try digest(first) == digest(second) && digest(first) != digest(changed))
        #expect(first.fingerPrompts == 1 && second.fingerPrompts == 1, "each approval is its own touch")
    }

    @Test("through touchgated: the run is approved by the daemon, filtered, and its receipt carries the daemon's key")
    func runThroughTheDaemon() async throws {
        try DaemonAttackTests.requireRoot()
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let added = try await rig.run(["secret", "add", "gh-token", "--policy", "biometry-any"], stdin: Data(Self.value.utf8))
        try #require(added.status == 0, "\(added.stderrLines)")
        let receipt = rig.home.path("receipt.json")
        let ran = try await rig.run(["run", "--secret", "GH=gh-token", "--receipt", receipt, "--", "/bin/sh", "-c",
                                     "echo \"raw: $GH\"; printf %s \"$GH\" | base64"], presenting: ["whorl"])
        #expect(ran.status == 0, "\(ran.stderrLines)\n\(rig.logTail)")
        #expect(ran.stdout.contains("raw: [GH hidden]") && Self.leaks(ran.stdout).isEmpty, "\(ran.stdout)")
        let key = try await rig.run(["audit", "public-key"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let verified = try await rig.run(["receipt", "verify", receipt, "--public-key", key, "--json"])
        #expect(verified.status == 0, "\(verified.stderrLines)")
        let requester = (verified.json?["statement"] as? [String: Any])?["requester"] as? String
        #expect(requester?.contains("touchgated's socket") == true, "\(String(describing: requester))")
        let wrong = try await rig.run(["run", "--secret", "GH=gh-token", "--", "/bin/true"], presenting: ["arch"])
        #expect(wrong.status == 1, "\(wrong.stderrLines)")
    }

    @Test("through touchgated too: on a terminal the request is shown before the touch; without one, a desktop notification")
    func promptsThroughTheDaemon() async throws {
        try DaemonAttackTests.requireRoot()
        let notifications = try await NotificationRig()
        defer { notifications.stop() }
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let added = try await rig.run(["secret", "add", "gh-token", "--policy", "biometry-any"], stdin: Data(Self.value.utf8))
        try #require(added.status == 0, "\(added.stderrLines)")
        let client = rig.client()
        let program = try #require(client.binaryOverride)
        rig.finger.present(["whorl"])
        let line = "exec \(program) run --secret GH=gh-token --reason daemon-terminal -- /bin/sh -c 'echo \"token $GH\"'"
        let terminal = try await TerminalSession(line, directory: rig.home.url.path,
                                                 environment: client.environment.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        #expect(try await terminal.waitForLine(timeout: 20) { VirtualImageFinger.isPrompt($0) }, "\(terminal.output)")
        rig.finger.presentNext()
        #expect(await terminal.finish(timeout: 30) == 0, "\(terminal.output)\n\(rig.logTail)")
        #expect(terminal.output.contains("reason:    daemon-terminal") && terminal.output.contains("token [GH hidden]")
                && terminal.output.contains("at touchgated's socket"), "\(terminal.output)")

        var detached = client
        detached.environment.merge(notifications.environment) { $1 }
        detached.wrapper = ["/usr/bin/setsid", "--wait"]
        rig.finger.present(["whorl"])
        let finger = rig.finger
        let ran = try await detached.run(["run", "--secret", "GH=gh-token", "--reason", "daemon without a terminal", "--",
                                          "/bin/sh", "-c", "echo \"token $GH\""]) { line, _ in finger.handle(line) }
        #expect(ran.status == 0 && ran.stdout.contains("token [GH hidden]"), "\(ran.stderrLines)")
        let logged = try String(contentsOfFile: notifications.directory.path("calls.log"), encoding: .utf8)
        #expect(notifications.calls("Notify").count == 1 && logged.contains("reason:    daemon without a terminal"), "\(logged)")
        #expect(notifications.calls("CloseNotification").count == 1)
    }

    /// Through touchgated the values of an approved run go back to the program that asked:
    /// only the installed program may ask (it shows the person the command and runs exactly
    /// it). A raw request from any other process of the user, which would show one command
    /// and do anything with the values, is refused before anything is asked.
    @Test("as a user through touchgated: the installed program runs approved commands; a raw approve request is refused")
    func onlyTheInstalledProgramAsksTheDaemon() async throws {
        try DaemonAttackTests.requireRoot()
        let rig = try await DaemonRig()
        try DaemonAttackTests.installAgentProgram(in: rig)
        try await rig.start()
        let user = DaemonAttackTests.user
        try await rig.initialize(as: user)
        let added = try await rig.run(["secret", "add", "gh-token", "--policy", "biometry-any"], stdin: Data(Self.value.utf8),
                                      as: user)
        try #require(added.status == 0, "\(added.stderrLines)")
        let ran = try await rig.run(["run", "--secret", "GH=gh-token", "--", "/bin/sh", "-c", "echo \"raw: $GH\""],
                                    presenting: ["whorl"], as: user)
        #expect(ran.status == 0 && ran.stdout.contains("raw: [GH hidden]"), "\(ran.stderrLines)\n\(rig.logTail)")
        let approved = try await rig.run(["approve", "--action", "deploy", "--arguments", "{}"], presenting: ["whorl"], as: user)
        #expect(approved.status == 0, "\(approved.stderrLines)")
        let request = #"{"request":{"command":["/bin/true"],"secrets":[{"variable":"GH","item":"gh-token"}]}}"#
        let tried = try await DaemonAttackTests.run(as: user, ["/usr/bin/python3", "-c", try Attacker.script, rig.socketPath,
                                                               "await", "approve", request])
        #expect(tried.stdout.contains("ended forbidden") && !tried.stdout.contains("asked"), "\(tried)")
        #expect(!tried.stdout.contains(Self.value))
    }

    @Test("on a terminal the request is shown before the touch; without one, as a desktop notification withdrawn after")
    func promptsWhereThePersonIs() async throws {
        let notifications = try await NotificationRig()
        defer { notifications.stop() }
        let vault = try await Self.vault()
        defer { vault.home.remove() }
        // On a pseudo-terminal (script(1)), as an agent's command run in a terminal window.
        let line = "exec \(CLIProcess.binary) run --secret GH=gh-token --reason release-notes -- /bin/sh -c 'echo \"token $GH\"'"
        vault.finger.present(["whorl"])
        let terminal = try await TerminalSession(line, directory: vault.home.url.path, environment: vault.rig.process.environment)
        #expect(try await terminal.waitForLine(timeout: 20) { VirtualImageFinger.isPrompt($0) },
                "\(terminal.output)")
        vault.finger.presentNext()
        #expect(await terminal.finish(timeout: 30) == 0, "\(terminal.output)")
        let screen = terminal.output
        #expect(screen.contains("reason:    release-notes") && screen.contains("command:   /bin/sh -c")
                && screen.contains("token [GH hidden]"), "\(screen)")
        #expect(!screen.contains(Self.value))

        var process = vault.rig.process
        process.environment.merge(notifications.environment) { $1 }
        process.wrapper = ["/usr/bin/setsid", "--wait"]
        vault.finger.present(["whorl"])
        let finger = vault.finger
        let detached = try await process.run(["run", "--secret", "GH=gh-token", "--reason", "no terminal here", "--",
                                              "/bin/sh", "-c", "echo \"token $GH\""]) { line, _ in finger.handle(line) }
        #expect(detached.status == 0, "\(detached.stderrLines)")
        let shown = notifications.calls("Notify")
        // The body's lines follow the call's in the server's log.
        let logged = try String(contentsOfFile: notifications.directory.path("calls.log"), encoding: .utf8)
        #expect(shown.count == 1 && shown.first?.contains("approve: run /bin/sh") == true
                && logged.contains("reason:    no terminal here") && logged.contains("GH=gh-token"), "\(logged)")
        #expect(notifications.calls("CloseNotification").count == 1)
        #expect(!shown.joined().contains(Self.value))
    }
}
