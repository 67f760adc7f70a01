import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate approve`: a touch that approves one action an agent describes, for a harness
/// that asks before a tool runs (a PreToolUse hook) or a script.
struct Approve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Ask for a touch approving one action, bound to its arguments; answer with a signed receipt.",
        discussion: """
            With --action (and --arguments, JSON), the receipt goes to standard output: exit \
            status 0 approved, 1 no match, 7 locked out, 130 cancelled. With --hook, the action \
            is read from standard input as an agent's pre-tool hook gives it (a JSON object with \
            tool_name, tool_input and cwd, as Claude Code's PreToolUse hooks send) and the answer \
            is the JSON such a hook returns (hookSpecificOutput.permissionDecision allow or deny, \
            with the reason); exit status 0 when approved, 2 when refused (the hook's "block"). \
            Every decision is recorded in the audit trail.
            """)

    @OptionGroup var readerOptions: ReaderOptions

    @Flag(help: "Read a pre-tool hook's JSON from standard input and answer as a hook.")
    var hook = false

    @Option(help: "What is to be approved (a tool's name, a short title).")
    var action: String?

    @Option(help: "Its arguments, as JSON: bound exactly.")
    var arguments: String?

    @Option(help: "Why, shown before the touch.")
    var reason: String?

    func validate() throws {
        guard hook != (action != nil) else { throw ValidationError("give --action (and --arguments), or --hook") }
        if let arguments, (try? JSONDecoder().decode(JSONValue.self, from: Data(arguments.utf8))) == nil {
            throw ValidationError("--arguments is not JSON")
        }
    }

    func run() async throws {
        ApprovalPrompt.requireInstalledProgram()
        let device = readerOptions.device
        let (hook, action, arguments, reason) = (self.hook, self.action, self.arguments, self.reason)
        try await CommandRunner.run(json: hook) { console in
            let request: ApprovalRequest
            if hook {
                request = try Self.hookRequest(Data(FileInput.read(0) ?? []), reason: reason)
            } else {
                request = ApprovalRequest(action: action, arguments: try arguments.map(Self.canonical), reason: reason,
                                          channel: "approve")
            }
            if let problem = request.problem { throw ServiceError(.usage, problem) }
            let report = try await ApprovalPrompt.during(request) {
                try await ApprovalPrompt.service.approve(request, device: device,
                                                         interaction: TerminalInteraction(console: console)).0
            }
            if hook {
                let decision = report.refusal == nil ? "allow" : "deny"
                let why = report.refusal.map { "refused by the user's fingerprint reader: \($0.message)" }
                    ?? "approved with a touch (\(report.receipt.fields?.match ?? "finger")); receipt digest \(report.receipt.fields?.digest ?? "")"
                let answer = JSONValue.object(["hookSpecificOutput": .object([
                    "hookEventName": .string("PreToolUse"), "permissionDecision": .string(decision),
                    "permissionDecisionReason": .string(why),
                ])])
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                let data = try encoder.encode(answer)
                FileOutput.write(String(decoding: data, as: UTF8.self) + "\n", to: 1)
                if report.refusal != nil { FileOutput.write(why + "\n", to: 2) }
                return report.refusal == nil ? ExitStatus.success : 2
            }
            FileOutput.write(WireCoding.line(report.receipt) + "\n", to: 1)
            if let refusal = report.refusal { throw refusal }
            return ExitStatus.success
        }
    }

    /// The action a pre-tool hook describes: the tool's name, its input (JSON, keys sorted),
    /// the directory.
    static func hookRequest(_ data: Data, reason: String?) throws(ServiceError) -> ApprovalRequest {
        guard let object = (try? JSONDecoder().decode(JSONValue.self, from: data))?.object,
              let tool = object["tool_name"]?.string, !tool.isEmpty else {
            throw ServiceError(.usage, "standard input is not a pre-tool hook's JSON (an object with tool_name and tool_input)")
        }
        var request = ApprovalRequest(action: tool, arguments: (object["tool_input"] ?? .object([:])).canonicalText,
                                      reason: reason ?? "the agent's hook before \(tool)", channel: "hook")
        request.directory = object["cwd"]?.string
        return request
    }

    /// JSON text with its keys sorted, as an approval binds it (``JSONValue/canonicalText``,
    /// as `touchgate mcp` binds its arguments).
    static func canonical(_ text: String) throws(ServiceError) -> String {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            throw ServiceError(.usage, "--arguments is not JSON")
        }
        return value.canonicalText
    }
}
