import Foundation
import Testing
import TouchgateTestSupport

/// The README's "Try it without a reader" runs as written: its `sh` blocks, in order, in
/// one bash on a pseudo-terminal, the passphrase typed at the prompts. A README command
/// that stops working fails this test.
@Suite(.serialized, .timeLimit(.minutes(20)))
struct ReadmeWalkthroughTests {
    static let passphrase = "a passphrase typed at the terminal"

    @Test func tryItWithoutAReaderRunsAsWritten() async throws {
        var lines = try Readme.shellBlocks(inSection: "Try it without a reader")
            .joined(separator: "\n").components(separatedBy: "\n")
        // The build step is checked and left out: `swift test` built both products, and a
        // `swift build` inside it would wait for this run's lock on .build. The next line
        // puts `$PWD/.build/debug` on PATH as written; here that directory is this build's.
        let builds = lines.indices.filter { lines[$0].hasPrefix("swift build") }
        try #require(builds.count == 1, "one build line expected in the section: \(lines)")
        #expect(lines[builds[0]].contains("--product touchgate ") && lines[builds[0]].contains("--product touchgate-cli")
                    && lines[builds[0]].contains("--product virtual-finger"))
        lines[builds[0]] = "# built by swift test: " + lines[builds[0]]
        #expect(lines.contains { $0.hasPrefix("export PATH=\"$PWD/.build/debug:") })
        let secret = try #require(lines.lazy.compactMap(Self.echoedSecret).first,
                                  "no `echo \"VALUE\" | touchgate secret add` line in the section")

        let home = try TemporaryDirectory("touchgate-readme")
        defer { home.remove() }
        let checkout = home.path("checkout"), temporary = home.path("tmp")
        let products = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: checkout + "/.build", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: checkout + "/.build/debug", withDestinationPath: products)
        let script = home.path("walkthrough.sh")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: script))

        // -e: the first command that fails ends the run with its status.
        let session = try await TerminalSession("bash -e \(script)", directory: checkout, environment: [
            "HOME": home.url.path, "TMPDIR": temporary, "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8", "TERM": "xterm",
        ], answers: [("New vault passphrase:", Self.passphrase), ("Repeat it:", Self.passphrase)])
        let status = await session.finish(timeout: 240)
        let output = session.output
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: temporary)
        for leftover in leftovers {  // a run that stopped early: take its key out of the keyring
            _ = try? await CLIProcess(environment: ["HOME": home.url.path, "XDG_DATA_HOME": temporary + "/" + leftover])
                .run(["lock"])
        }
        #expect(status == 0, "the walk-through failed (status \(status)):\n\(output)")

        let steps: [(what: String, shows: String)] = [
            ("enroll whorl", "Enrolled right-index of "),
            ("verify whorl matches", "match: right-index of "),
            ("verify arch does not match", "no match"),
            ("  … exit status 1", "exit status 1"),
            ("init asks for the passphrase", "New vault passphrase:"),
            ("  … twice", "Repeat it:"),
            ("init creates the vault", "Created the vault in "),
            ("secret add stores it", "Stored 'demo-token'"),
            ("secret get with whorl prints the value", "\n" + secret + "\n"),
            ("secret get with arch is refused", "No match (2 more before a lockout)"),
            ("  … exit status 1", "exit status 1"),
            ("status shows the vault unlocked", "vault: unlocked"),
            ("audit verify finds the chain intact", "audit log intact: "),
            ("lock", "Locked."),
        ]
        var rest = output[...]
        for step in steps {
            guard let found = rest.range(of: step.shows) else {
                Issue.record("step '\(step.what)': '\(step.shows)' not shown after the previous step:\n\(output)")
                break
            }
            rest = rest[found.upperBound...]
        }
        #expect(output.components(separatedBy: secret).count == 2, "the value is shown once, by the whorl release")
        #expect(!output.contains(Self.passphrase), "the passphrase is not echoed")
        #expect(leftovers.isEmpty, "the clean-up deletes the demo's data (and virtual-finger its sockets): \(leftovers)")
    }

    /// The Quick start's `scripts/quickstart.sh` line, run as written on a terminal with
    /// this process's environment (less any `FP_*` variable, so it looks for a real reader
    /// as a user's run does and falls back to the virtual one). It runs in a copy of this
    /// checkout (with `shared/` beside it): `swift test` holds the lock on this one's
    /// .build, so its build would wait forever. The copy builds (debug, as the script does)
    /// from nothing: about a minute and a half on two idle cores, longer beside the other tests.
    @Test func quickStartRunsAsWritten() async throws {
        let line = try #require(try Readme.shellBlocks(inSection: "Quick start")
            .joined(separator: "\n").components(separatedBy: "\n")
            .first { $0.hasPrefix("scripts/quickstart.sh") }, "no scripts/quickstart.sh line in Quick start")
        let command = String(line.prefix { $0 != "#" }).trimmingCharacters(in: .whitespaces)

        let home = try TemporaryDirectory("touchgate-quickstart")
        defer { home.remove() }
        let files = FileManager.default, checkout = home.path("touchgate")
        try files.createDirectory(atPath: checkout, withIntermediateDirectories: false)
        for name in try files.contentsOfDirectory(atPath: Fixtures.packageRoot.path)
        where !name.hasPrefix(".build") && name != ".git" {
            try files.copyItem(at: Fixtures.packageRoot.appendingPathComponent(name), to: URL(fileURLWithPath: checkout + "/" + name))
        }
        try files.createSymbolicLink(atPath: home.path("shared"),
                                     withDestinationPath: Fixtures.packageRoot.deletingLastPathComponent().appendingPathComponent("shared").path)

        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FP_") }
        let session = try await TerminalSession(command, directory: checkout, environment: environment)
        let status = await session.finish(timeout: 15 * 60)  // a backstop: 498 s were seen beside a full run
        let output = session.output
        #expect(status == 0, "\(command) failed (status \(status)):\n\(output)")
        // Every command went to the demo's touchgate agent, as personal mode's commands do.
        for shown in ["Enrolled right-index of ", "match: right-index of ", "no match", "secret get printed: ghp_demo_",
                      "touchgate agent: the unlocked key is in the agent's memory", "audit log intact: ", "== done"] {
            #expect(output.contains(shown), "'\(shown)' not shown:\n\(output)")
        }
    }

    /// The value of an `echo "VALUE" | touchgate secret add …` line.
    static func echoedSecret(_ line: String) -> String? {
        guard line.hasPrefix("echo \""), let end = line.range(of: "\" | touchgate secret add ") else { return nil }
        return String(line[line.index(line.startIndex, offsetBy: 6)..<end.lowerBound])
    }
}

/// The README of this checkout.
enum Readme {
    /// The lines of the fenced `sh` blocks of the `## title` section, one string per block.
    static func shellBlocks(inSection title: String) throws -> [String] {
        let lines = try self.lines()
        let start = try #require(lines.firstIndex(of: "## " + title), "README has no '## \(title)' section")
        return try blocks(lines, after: start, until: "## ", named: title)
    }

    /// The lines of the fenced `sh` blocks under `### subsection` of the `## section`.
    static func shellBlocks(inSection section: String, subsection: String) throws -> [String] {
        let lines = try self.lines()
        let top = try #require(lines.firstIndex(of: "## " + section), "README has no '## \(section)' section")
        let start = try #require(lines[top...].firstIndex(of: "### " + subsection),
                                 "README's '\(section)' has no '### \(subsection)'")
        return try blocks(lines, after: start, until: "#", named: subsection)
    }

    private static func lines() throws -> [String] {
        try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
            .components(separatedBy: "\n")
    }

    /// The `sh` blocks from the line after `start` to the next heading starting with `until`
    /// (outside a block).
    private static func blocks(_ lines: [String], after start: Int, until heading: String, named: String) throws -> [String] {
        var blocks: [String] = [], block: [String]?
        for line in lines[(start + 1)...] {
            if block == nil, line.hasPrefix(heading), line.hasPrefix("#") {
                break
            } else if block == nil, line == "```sh" {
                block = []
            } else if let current = block, line == "```" {
                blocks.append(current.joined(separator: "\n"))
                block = nil
            } else {
                block? += [line]
            }
        }
        try #require(!blocks.isEmpty, "'\(named)' has no sh block")
        return blocks
    }
}
