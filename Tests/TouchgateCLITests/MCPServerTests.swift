import Foundation
import Testing
import TouchgateTestSupport

/// `touchgate mcp` as built, over stdio, with the official MCP Python SDK (PyPI `mcp`) as its
/// client: the agent's side is Tests/TouchgateCLITests/MCPClients/agent.py.
@Suite(.serialized, .timeLimit(.minutes(6)))
struct MCPServerTests {
    /// The SDK's Python, in the checkout's own virtual environment (scripts/test.sh makes it).
    static var python: String { Fixtures.packageRoot.path + "/.build-python/bin/python" }
    static var agent: String { Fixtures.packageRoot.path + "/Tests/TouchgateCLITests/MCPClients/agent.py" }

    static func requireSDK() async throws {
        let found = FileManager.default.isExecutableFile(atPath: python)
            ? try await runProgram(python, ["-c", "import mcp"]).status == 0 : false
        let how = "these tests need the MCP Python SDK in .build-python: /usr/bin/python3 -m venv .build-python "
            + "&& .build-python/bin/pip install 'mcp>=1.20,<3' (scripts/test.sh does it; Debian: apt-get install python3-venv)"
        try #require(found, "\(how)")
    }

    /// One agent session: `calls` made in order through `touchgate mcp`, the finger presenting `prints`.
    static func session(_ vault: VaultRig, _ calls: [[String: Any]], presenting prints: [String] = [],
                        environment: [String: String] = [:]) async throws -> (steps: [[String: Any]], result: CLIResult) {
        var process = vault.rig.process
        process.environment.merge(environment) { $1 }
        let encoded = String(decoding: try JSONSerialization.data(withJSONObject: calls), as: UTF8.self)
        process.wrapper = [python, agent, encoded]
        vault.finger.present(prints)
        let finger = vault.finger
        let result = try await process.run(["mcp"], timeout: 120) { line, _ in finger.handle(line) }
        let steps = result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        return (steps, result)
    }

    static func run(_ command: [String], secrets: [String: String], reason: String = "the agent's task") -> [String: Any] {
        ["tool": "run_with_secrets", "arguments": ["command": command, "secrets": secrets, "reason": reason]]
    }

    static func approval(_ action: String, _ arguments: [String: Any]) -> [String: Any] {
        ["tool": "request_approval", "arguments": ["action": action, "arguments": arguments, "reason": "ship it"]]
    }

    static func digest(_ step: [String: Any]) -> String? {
        guard let receipt = (step["structured"] as? [String: Any])?["receipt"] as? [String: Any],
              let statement = receipt["statement"] as? String,
              let fields = (try? JSONSerialization.jsonObject(with: Data(statement.utf8))) as? [String: Any] else { return nil }
        return fields["digest"] as? String
    }

    @Test("the SDK negotiates, lists the three tools, and run_with_secrets runs after a touch with nothing of the value in its answer")
    func runWithSecrets() async throws {
        try await Self.requireSDK()
        let vault = try await AgentDoorTests.vault()
        defer { vault.home.remove() }
        let mark = vault.home.path("ran")
        let (steps, result) = try await Self.session(vault, [
            ["tool": "list_secrets"],
            Self.run(["/bin/sh", "-c", AgentDoorTests.leaky], secrets: ["GH": "gh-token"]),
            Self.run(["/usr/bin/env"], secrets: ["GH": "gh-token"]),
        ], presenting: ["whorl"], environment: ["MARK": mark])
        #expect(result.status == 0, "\(result.stderrLines)")
        try #require(steps.count == 5, "\(result.stdout)\n\(result.stderrLines)")
        #expect((steps[0]["initialized"] as? String)?.hasPrefix("20") == true && steps[0]["server"] as? String == "touchgate")
        #expect(steps[1]["tools"] as? [String] == ["list_secrets", "run_with_secrets", "request_approval"])
        #expect((steps[2]["text"] as? String)?.contains("gh-token (biometry-any)") == true, "\(steps[2])")
        let ran = steps[3]
        #expect(ran["is_error"] as? Bool == false, "\(ran)")
        #expect(FileManager.default.fileExists(atPath: mark))
        let structured = try #require(ran["structured"] as? [String: Any])
        #expect(structured["exit_status"] as? Int == 0)
        let stdout = try #require(structured["stdout"] as? String)
        #expect(stdout.contains("raw: [GH hidden]"), "\(stdout)")
        // Nothing of the value in any of its encodings, anywhere in what the agent got.
        #expect(AgentDoorTests.leaks(result.stdout).isEmpty, "\(AgentDoorTests.leaks(result.stdout))\n\(result.stdout)")
        #expect(AgentDoorTests.leaks(result.stderrLines.joined(separator: "\n")).isEmpty)
        let environment = try #require((steps[4]["structured"] as? [String: Any])?["stdout"] as? String)
        #expect(environment.contains("GH=[GH hidden]"), "env ran and its output was filtered: \(environment)")
        #expect(result.fingerPrompts == 2, "each run is its own touch: \(result.stderrLines)")

        // The receipt the agent got verifies offline against the host's published key.
        let receipt = try #require(structured["receipt"] as? [String: Any])
        let file = vault.home.path("receipt.json")
        try JSONSerialization.data(withJSONObject: receipt).write(to: URL(fileURLWithPath: file))
        let key = try await vault.run(["audit", "public-key"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let verified = try await vault.run(["receipt", "verify", file, "--public-key", key, "--json"])
        #expect(verified.status == 0, "\(verified.stderrLines)")
        let statement = try #require(verified.json?["statement"] as? [String: Any])
        #expect((statement["chain"] as? [String])?.contains { $0.contains("python") } == true,
                "the receipt names the agent's process: \(statement)")
    }

    @Test("a wrong finger runs nothing and says so; a lockout refuses at once; errors are the tool's, not the session's")
    func refusals() async throws {
        try await Self.requireSDK()
        let vault = try await AgentDoorTests.vault()
        defer { vault.home.remove() }
        let mark = vault.home.path("ran")
        let (steps, result) = try await Self.session(vault, [
            Self.run(["/bin/sh", "-c", "echo ran > \(mark)"], secrets: ["GH": "gh-token"]),
            Self.run(["/bin/true"], secrets: ["GH": "no-such-item"]),
            Self.run([], secrets: [:]),
            ["tool": "no_such_tool"],
            Self.run(["/bin/echo", "a\u{0}--dry-run"], secrets: ["GH": "gh-token"]),
            ["tool": "run_with_secrets", "arguments": ["command": ["/bin/true"], "secrets": [:] as [String: String],
                                                       "reason": "x", "directory": "relative/dir"]],
        ], presenting: ["arch"])
        #expect(result.status == 0, "\(result.stderrLines)")
        try #require(steps.count == 8, "\(result.stdout)")
        #expect(steps[2]["is_error"] as? Bool == true && (steps[2]["text"] as? String)?.contains("Refused") == true, "\(steps[2])")
        #expect((steps[2]["structured"] as? [String: Any])?["refused"] as? String == "no-match")
        #expect(Self.digest(steps[2]) != nil, "a refusal is signed too")
        #expect(!FileManager.default.fileExists(atPath: mark), "nothing ran")
        #expect(steps[3]["is_error"] as? Bool == true && (steps[3]["text"] as? String)?.contains("no-such-item") == true)
        #expect(steps[4]["is_error"] as? Bool == true && steps[5]["is_error"] as? Bool == true)
        #expect((steps[6]["text"] as? String)?.contains("NUL") == true, "a NUL would cut what the person read: \(steps[6])")
        #expect((steps[7]["text"] as? String)?.contains("absolute path") == true, "\(steps[7])")

        for _ in 0..<2 { _ = try await vault.run(["verify"], presenting: ["arch"]) }
        let (locked, lockedRun) = try await Self.session(vault, [
            Self.run(["/bin/sh", "-c", "echo ran > \(mark)"], secrets: ["GH": "gh-token"]),
        ])
        #expect(locked.last?["is_error"] as? Bool == true && (locked.last?["structured"] as? [String: Any])?["refused"] as? String == "locked-out",
                "\(locked)")
        #expect(lockedRun.fingerPrompts == 0 && !FileManager.default.fileExists(atPath: mark))
    }

    @Test("request_approval binds to its arguments and to the agent's process: no approval stands for another's")
    func approvalsAreBound() async throws {
        try await Self.requireSDK()
        let vault = try await AgentDoorTests.vault(token: false)
        defer { vault.home.remove() }
        let deploy = Self.approval("deploy", ["environment": "production", "version": "1.4.2"])
        let changed = Self.approval("deploy", ["environment": "production", "version": "1.4.3"])
        let (first, firstRun) = try await Self.session(vault, [deploy, deploy, changed], presenting: ["whorl"])
        try #require(first.count == 5, "\(firstRun.stdout)\n\(firstRun.stderrLines)")
        #expect(first[2...].allSatisfy { $0["is_error"] as? Bool == false }, "\(first)")
        #expect(firstRun.fingerPrompts == 3, "every approval is its own touch")
        #expect(Self.digest(first[2]) == Self.digest(first[3]), "the same arguments from the same agent: the same digest")
        #expect(Self.digest(first[2]) != Self.digest(first[4]), "a changed argument: another digest")
        #expect(firstRun.stderrLines.joined().contains("1.4.3"), "the person sees the arguments")
        // A second agent process asking the same: its own digest, its own touch.
        let (second, secondRun) = try await Self.session(vault, [deploy], presenting: ["whorl"])
        #expect(second.last?["is_error"] as? Bool == false && secondRun.fingerPrompts == 1)
        #expect(Self.digest(second[2]) != nil && Self.digest(second[2]) != Self.digest(first[2]))
        // Refused by a wrong finger: a signed refusal the harness can check before acting.
        let (refused, _) = try await Self.session(vault, [deploy], presenting: ["arch"])
        #expect(refused.last?["is_error"] as? Bool == true && (refused.last?["structured"] as? [String: Any])?["approved"] as? Bool == false)
    }
}
