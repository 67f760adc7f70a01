import ArgumentParser
import Foundation
import MCP
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate mcp`: a Model Context Protocol server on standard input and output, for AI
/// coding agents. Its tools get a secret's effect approved by a touch and never return a
/// value: `list_secrets`, `run_with_secrets`, `request_approval`.
struct MCPServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract: "Serve AI coding agents over the Model Context Protocol (stdio): secrets used, never shown.",
        discussion: """
            Add it to the agent's MCP configuration as a stdio server whose command is \
            `touchgate mcp` (docs/INTEGRATIONS.md, "AI coding agents"). Tools: list_secrets (names \
            and policies, never values); run_with_secrets (a command, the secrets it needs by \
            variable and item, a reason: after a touch approving exactly that, the exit status, \
            the output with every value filtered out, and the signed receipt); request_approval \
            (an action the agent describes and its arguments: a touch bound to exactly those, \
            answered with a receipt the agent's harness can check). Prompts go to a desktop \
            notification and standard error; no tool ever returns a secret.
            """)

    @OptionGroup var readerOptions: ReaderOptions

    @Option(help: ArgumentHelp("The most bytes of each output stream a run returns.", valueName: "bytes"))
    var outputLimit = 262_144

    func run() async throws {
        ApprovalPrompt.requireInstalledProgram()
        let device = readerOptions.device
        let limit = max(1024, outputLimit)
        let server = Server(name: "touchgate", version: Release.version,
                            instructions: """
                                Touchgate keeps secrets behind the user's fingerprint. Use run_with_secrets \
                                to run a command that needs a secret (the user approves it with a touch; the \
                                output never contains the value) and request_approval before an action the \
                                user should approve. Never ask the user to paste a secret.
                                """,
                            capabilities: .init(tools: .init(listChanged: false)))
        await server.withMethodHandler(ListTools.self) { _ in .init(tools: MCPTools.all) }
        await server.withMethodHandler(CallTool.self) { call in
            await MCPTools.call(call.name, call.arguments ?? [:], device: device, outputLimit: limit)
        }
        try await server.start(transport: StdioTransport())
        await server.waitUntilCompleted()
    }
}

/// The tools of `touchgate mcp`, each a thin adapter over the service's use cases.
enum MCPTools {
    static let all: [Tool] = [
        Tool(name: "list_secrets",
             description: "The names and access policies of the user's secrets, to name them in run_with_secrets. Never a value.",
             inputSchema: .object(["type": "object", "properties": .object([:])]),
             annotations: .init(readOnlyHint: true)),
        Tool(name: "run_with_secrets",
             description: """
                 Run a command with secrets in its environment, after the user approves exactly this command \
                 (command line, directory, secrets, reason) with a fingerprint touch. Returns the exit status, \
                 the command's output with every secret value replaced by [VARIABLE hidden], and a signed receipt. \
                 The values are never returned; every run needs a new touch.
                 """,
             inputSchema: .object([
                 "type": "object",
                 "properties": .object([
                     "command": .object(["type": "array", "items": .object(["type": "string"]),
                                         "description": "The program and its arguments (not run through a shell)."]),
                     "secrets": .object(["type": "object", "additionalProperties": .object(["type": "string"]),
                                         "description": "Environment variable -> secret name, e.g. {\"GITHUB_TOKEN\": \"github-token\"}."]),
                     "reason": .object(["type": "string", "description": "Why, shown to the user before the touch."]),
                     "directory": .object(["type": "string", "description": "Working directory (default: the server's)."]),
                 ]),
                 "required": .array([.string("command"), .string("secrets"), .string("reason")]),
             ])),
        Tool(name: "request_approval",
             description: """
                 Ask the user to approve an action you describe, with a fingerprint touch bound to exactly these \
                 arguments. Returns a signed receipt (approved or refused); a changed argument needs a new touch.
                 """,
             inputSchema: .object([
                 "type": "object",
                 "properties": .object([
                     "action": .object(["type": "string", "description": "What you want to do (a tool's name, a short title)."]),
                     "arguments": .object(["type": "object", "description": "Its arguments, exactly as they will be used."]),
                     "reason": .object(["type": "string", "description": "Why, shown to the user."]),
                 ]),
                 "required": .array([.string("action"), .string("reason")]),
             ])),
    ]

    /// What a tool's call answers; a refusal or a failure is a result with `isError`, so that
    /// the agent reads why.
    static func call(_ name: String, _ arguments: [String: Value], device: String?, outputLimit: Int) async -> CallTool.Result {
        do {
            switch name {
            case "list_secrets":
                let items = try await service.secretList()
                let listed = items.map { ["name": Value.string($0.name), "policy": .string($0.policy)] as [String: Value] }
                let text = items.isEmpty ? "No secrets are stored." : items.map { "\($0.name) (\($0.policy))" }.joined(separator: "\n")
                return .init(content: [.text(text: text, annotations: nil, _meta: nil)],
                             structuredContent: .object(["secrets": .array(listed.map(Value.object))]))
            case "run_with_secrets":
                return try await runWithSecrets(arguments, device: device, outputLimit: outputLimit)
            case "request_approval":
                return try await requestApproval(arguments, device: device)
            default:
                return failure("no tool named '\(name)'; the tools are list_secrets, run_with_secrets, request_approval")
            }
        } catch let error as ServiceError {
            return failure(error.message)
        } catch {
            return failure(String(describing: error))
        }
    }

    private static func runWithSecrets(_ arguments: [String: Value], device: String?,
                                       outputLimit: Int) async throws -> CallTool.Result {
        guard let command = arguments["command"]?.arrayValue?.compactMap(\.stringValue), !command.isEmpty,
              command.count == arguments["command"]?.arrayValue?.count else {
            return failure("command: give the program and its arguments as an array of strings")
        }
        var secrets: [SecretBinding] = []
        for (variable, item) in (arguments["secrets"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let item = item.stringValue else { return failure("secrets: each value is a secret's name") }
            secrets.append(SecretBinding(variable: variable, item: item))
        }
        let request = ApprovalRequest(command: command,
                                      directory: arguments["directory"]?.stringValue ?? FileManager.default.currentDirectoryPath,
                                      secrets: secrets, reason: arguments["reason"]?.stringValue)
        if let problem = request.problem { return failure(problem) }
        let collected = ApprovedRun.Collected()
        let outcome = try await ApprovalPrompt.during(request) {
            try await ApprovedRun.run(request, service: ApprovalPrompt.service, device: device,
                                      interaction: TerminalInteraction(console: Console(json: false)), standardInput: nil,
                                      output: .collected(limit: outputLimit), collected: collected)
        }
        let receipt = try Value(outcome.receipt)
        if let refusal = outcome.refusal {
            return .init(content: [.text(text: "Refused, nothing was run: \(refusal.message)", annotations: nil, _meta: nil)],
                         structuredContent: .object(["refused": .string(refusal.code.rawValue), "receipt": receipt]),
                         isError: true)
        }
        let standardOutput = String(decoding: collected.standardOutput, as: UTF8.self)
        let standardError = String(decoding: collected.standardError, as: UTF8.self)
        let status = outcome.status ?? 0
        var text = "exit status \(status)\n"
        if !standardOutput.isEmpty { text += "--- standard output ---\n\(standardOutput)\n" }
        if !standardError.isEmpty { text += "--- standard error ---\n\(standardError)\n" }
        if collected.truncated { text += "(output truncated at \(outputLimit) bytes per stream)\n" }
        return .init(content: [.text(text: text, annotations: nil, _meta: nil)],
                     structuredContent: .object([
                         "exit_status": .int(Int(status)), "stdout": .string(standardOutput), "stderr": .string(standardError),
                         "truncated": .bool(collected.truncated), "receipt": receipt,
                     ]),
                     isError: status != 0)
    }

    private static func requestApproval(_ arguments: [String: Value], device: String?) async throws -> CallTool.Result {
        guard let action = arguments["action"]?.stringValue, !action.isEmpty else {
            return failure("action: say what you want to do")
        }
        let request = ApprovalRequest(action: action, arguments: try canonical(arguments["arguments"] ?? .object([:])),
                                      reason: arguments["reason"]?.stringValue)
        if let problem = request.problem { return failure(problem) }
        let report = try await ApprovalPrompt.during(request) {
            try await ApprovalPrompt.service.approve(request, device: device,
                                      interaction: TerminalInteraction(console: Console(json: false))).0
        }
        let receipt = try Value(report.receipt)
        let text = report.refusal.map { "Refused: \($0.message)" }
            ?? "Approved by the user (\(report.receipt.fields?.match ?? "touch")); digest \(report.receipt.fields?.digest ?? "")."
        return .init(content: [.text(text: text, annotations: nil, _meta: nil)],
                     structuredContent: .object(["approved": .bool(report.refusal == nil), "receipt": receipt]),
                     isError: report.refusal != nil)
    }

    /// Arguments as the approval binds them: JSON, keys sorted, no spaces.
    static func canonical(_ value: Value) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private static func failure(_ message: String) -> CallTool.Result {
        .init(content: [.text(text: message, annotations: nil, _meta: nil)], isError: true)
    }
}
