import ArgumentParser
import FoundationEssentials
import Synchronization
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
        let tools = MCPTools(device: readerOptions.device, outputLimit: max(1024, outputLimit))
        await MCPServer(tools: tools).serve()
    }
}

/// The protocol's stdio transport and its methods, as the specification (2025-11-25, and the
/// versions before it that a client may ask for) says: JSON-RPC 2.0, one message per line.
///
/// Written here rather than taken from the MCP Swift SDK, measured: the SDK's module imports
/// FoundationNetworking for its HTTP transports, which made the statically linked
/// `touchgate-client` 102 MB instead of 64 and linked it against libcurl and libssl, for
/// a server that only ever speaks over a pipe. Tested against the official Python SDK as
/// the client (MCPServerTests).
struct MCPServer: Sendable {
    let tools: MCPTools

    /// The protocol versions served, newest first: a client asking for one gets it, any
    /// other the newest.
    static let versions = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    /// The longest message read (a tool's arguments are small; a larger line is refused).
    static let maximumMessageBytes = 4 << 20

    /// Reads requests until standard input ends; each request is answered in a task of
    /// its own (a touch can take a minute; a ping meanwhile is answered at once), the
    /// answers written whole, one at a time.
    func serve() async {
        let writer = LineWriter()
        await withDiscardingTaskGroup { group in
            for await line in Self.lines() {
                group.addTask { if let answer = await self.answer(line) { writer.write(answer) } }
            }
        }
    }

    /// The answer to one message, or nil for a notification.
    func answer(_ line: [UInt8]) async -> [UInt8]? {
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(line)) else {
            return Self.encode(Reply(id: .null, error: ReplyError(code: -32700, message: "not a JSON-RPC message")))
        }
        guard let id = message.id else { return nil }
        guard message.jsonrpc == "2.0", let method = message.method else {
            return Self.encode(Reply(id: id, error: ReplyError(code: -32600, message: "not a JSON-RPC 2.0 request")))
        }
        let params = message.params?.object ?? [:]
        switch method {
        case "initialize":
            let asked = params["protocolVersion"]?.string
            let version = asked.flatMap { Self.versions.contains($0) ? $0 : nil } ?? Self.versions[0]
            return Self.encode(Reply(id: id, result: .object([
                "protocolVersion": .string(version),
                "capabilities": .object(["tools": .object(["listChanged": .bool(false)])]),
                "serverInfo": .object(["name": .string("touchgate"), "version": .string(Release.version)]),
                "instructions": .string("""
                    Touchgate keeps secrets behind the user's fingerprint. Use run_with_secrets to run a \
                    command that needs a secret (the user approves it with a touch; the output never contains \
                    the value) and request_approval before an action the user should approve. Never ask the \
                    user to paste a secret.
                    """),
            ])))
        case "ping":
            return Self.encode(Reply(id: id, result: .object([:])))
        case "tools/list":
            return Self.encode(Reply(id: id, result: .object(["tools": .array(MCPTools.all)])))
        case "tools/call":
            guard let name = params["name"]?.string else {
                return Self.encode(Reply(id: id, error: ReplyError(code: -32602, message: "tools/call needs the tool's name")))
            }
            return Self.encode(Reply(id: id, result: await tools.call(name, params["arguments"]?.object ?? [:])))
        default:
            return Self.encode(Reply(id: id, error: ReplyError(code: -32601, message: "no method \(method)")))
        }
    }

    /// Standard input's lines, as bytes; a line over the limit is answered as unreadable.
    static func lines() -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            SystemThread.detach(name: nil) {
                var pending: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    pending += buffer[..<count]
                    while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = Array(pending[..<end])
                        pending.removeFirst(end + 1)
                        if !line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continuation.yield(line) }
                    }
                    if pending.count > maximumMessageBytes {
                        pending.removeAll()
                        continuation.yield(Array("{".utf8))
                    }
                }
                continuation.finish()
            }
        }
    }

    static func encode(_ reply: Reply) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return Array((try? encoder.encode(reply)) ?? Data(#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"unencodable"}}"#.utf8))
    }

    /// One message from the client.
    struct Message: Decodable {
        var jsonrpc: String?
        var id: JSONValue?
        var method: String?
        var params: JSONValue?
    }

    /// One answer.
    struct Reply: Encodable {
        var jsonrpc = "2.0"
        var id: JSONValue
        var result: JSONValue?
        var error: ReplyError?
        init(id: JSONValue, result: JSONValue) {
            self.id = id
            self.result = result
        }
        init(id: JSONValue, error: ReplyError) {
            self.id = id
            self.error = error
        }
    }

    struct ReplyError: Encodable {
        var code: Int
        var message: String
    }

    /// Standard output, one whole message per line, from any task.
    final class LineWriter: Sendable {
        private let lock = Mutex(())
        func write(_ message: [UInt8]) {
            lock.withLock { _ in FileOutput.write(message + [UInt8(ascii: "\n")], to: 1) }
        }
    }
}

/// Any JSON value, as a message carries it (the protocol's arguments are free-form).
enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case integer(Int)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int.self) { self = .integer(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    var string: String? { if case .string(let value) = self { value } else { nil } }
    var array: [JSONValue]? { if case .array(let value) = self { value } else { nil } }
    var object: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }

    /// `value` as JSON (a report, a receipt).
    static func from<T: Encodable>(_ value: T) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: WireCoding.encoder().encode(value))) ?? .null
    }

    /// The canonical text an approval binds: keys sorted, no spaces.
    var canonicalText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("null".utf8), as: UTF8.self)
    }
}

/// The tools of `touchgate mcp`, each a thin adapter over the service's use cases.
struct MCPTools: Sendable {
    let device: String?
    let outputLimit: Int
    /// One approval at a time: two requests on screen at once, one touch would approve
    /// whichever the reader serves first, not the one the person read.
    private let turns = Turns()

    init(device: String?, outputLimit: Int) {
        self.device = device
        self.outputLimit = outputLimit
    }

    /// Runs each body after the one before it has ended.
    actor Turns {
        private var busy = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
            if busy { await withCheckedContinuation { waiting.append($0) } }
            busy = true
            defer {
                if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
            }
            return try await body()
        }
    }

    static func schema(_ properties: [String: JSONValue], required: [String]) -> JSONValue {
        .object(["type": .string("object"), "properties": .object(properties), "required": .array(required.map(JSONValue.string))])
    }

    static func property(_ type: String, _ description: String, extra: [String: JSONValue] = [:]) -> JSONValue {
        .object(extra.merging(["type": .string(type), "description": .string(description)]) { $1 })
    }

    static let all: [JSONValue] = [
        .object([
            "name": .string("list_secrets"),
            "description": .string("The names and access policies of the user's secrets, to name them in run_with_secrets. Never a value."),
            "inputSchema": schema([:], required: []),
            "annotations": .object(["readOnlyHint": .bool(true)]),
        ]),
        .object([
            "name": .string("run_with_secrets"),
            "description": .string("""
                Run a command with secrets in its environment, after the user approves exactly this command \
                (command line, directory, secrets, reason) with a fingerprint touch. Returns the exit status, \
                the command's output with every secret value replaced by [VARIABLE hidden], and a signed receipt. \
                The values are never returned; every run needs a new touch.
                """),
            "inputSchema": schema([
                "command": property("array", "The program and its arguments (not run through a shell).",
                                    extra: ["items": .object(["type": .string("string")])]),
                "secrets": property("object", "Environment variable -> secret name, e.g. {\"GITHUB_TOKEN\": \"github-token\"}.",
                                    extra: ["additionalProperties": .object(["type": .string("string")])]),
                "reason": property("string", "Why, shown to the user before the touch."),
                "directory": property("string", "Working directory (default: the server's)."),
            ], required: ["command", "secrets", "reason"]),
        ]),
        .object([
            "name": .string("request_approval"),
            "description": .string("""
                Ask the user to approve an action you describe, with a fingerprint touch bound to exactly these \
                arguments. Returns a signed receipt (approved or refused); a changed argument needs a new touch.
                """),
            "inputSchema": schema([
                "action": property("string", "What you want to do (a tool's name, a short title)."),
                "arguments": property("object", "Its arguments, exactly as they will be used."),
                "reason": property("string", "Why, shown to the user."),
            ], required: ["action", "reason"]),
        ]),
    ]

    /// What a tool's call answers; a refusal or a failure is a result with `isError`, so that
    /// the agent reads why.
    func call(_ name: String, _ arguments: [String: JSONValue]) async -> JSONValue {
        do {
            switch name {
            case "list_secrets":
                let items = try await service.secretList()
                let text = items.isEmpty ? "No secrets are stored." : items.map { "\($0.name) (\($0.policy))" }.joined(separator: "\n")
                return Self.result(text, structured: ["secrets": .array(items.map {
                    .object(["name": .string($0.name), "policy": .string($0.policy)])
                })])
            case "run_with_secrets":
                return try await turns.run { try await runWithSecrets(arguments) }
            case "request_approval":
                return try await turns.run { try await requestApproval(arguments) }
            default:
                return Self.failure("no tool named '\(name)'; the tools are list_secrets, run_with_secrets, request_approval")
            }
        } catch let error as ServiceError {
            return Self.failure(error.message)
        } catch {
            return Self.failure(String(describing: error))
        }
    }

    private func runWithSecrets(_ arguments: [String: JSONValue]) async throws -> JSONValue {
        let words = arguments["command"]?.array ?? []
        let command = words.compactMap(\.string)
        guard !command.isEmpty, command.count == words.count else {
            return Self.failure("command: give the program and its arguments as an array of strings")
        }
        var secrets: [SecretBinding] = []
        for (variable, item) in (arguments["secrets"]?.object ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let item = item.string else { return Self.failure("secrets: each value is a secret's name") }
            secrets.append(SecretBinding(variable: variable, item: item))
        }
        // The directory as an absolute path with no link in it, and the program found now:
        // what the person reads is what runs.
        let asked = arguments["directory"]?.string ?? FileManager.default.currentDirectoryPath
        guard asked.hasPrefix("/"), let real = realpath(asked, nil) else {
            return Self.failure("directory: give an absolute path to an existing directory")
        }
        let directory = String(cString: real)
        free(real)
        guard let resolved = ApprovedRun.resolved(command, in: directory) else {
            return Self.failure("cannot find a program '\(StoredText.escaped(command[0]))' to run (not in PATH, or not executable)")
        }
        let request = ApprovalRequest(command: resolved, directory: directory, secrets: secrets,
                                      reason: arguments["reason"]?.string, channel: "mcp")
        if let problem = request.problem { return Self.failure(problem) }
        let collected = ApprovedRun.Collected()
        let (device, limit) = (self.device, outputLimit)
        let outcome = try await ApprovalPrompt.during(request) {
            try await ApprovedRun.run(request, service: ApprovalPrompt.service, device: device,
                                      interaction: TerminalInteraction(console: Console(json: false)), standardInput: nil,
                                      output: .collected(limit: limit), collected: collected)
        }
        let receipt = JSONValue.from(outcome.receipt)
        if let refusal = outcome.refusal {
            return Self.result("Refused, nothing was run: \(refusal.message)",
                               structured: ["refused": .string(refusal.code.rawValue), "receipt": receipt], isError: true)
        }
        let standardOutput = String(decoding: collected.standardOutput, as: UTF8.self)
        let standardError = String(decoding: collected.standardError, as: UTF8.self)
        let status = outcome.status ?? 0
        var text = "exit status \(status)\n"
        if !standardOutput.isEmpty { text += "--- standard output ---\n\(standardOutput)\n" }
        if !standardError.isEmpty { text += "--- standard error ---\n\(standardError)\n" }
        if collected.truncated { text += "(output truncated at \(limit) bytes per stream)\n" }
        return Self.result(text, structured: [
            "exit_status": .integer(Int(status)), "stdout": .string(standardOutput), "stderr": .string(standardError),
            "truncated": .bool(collected.truncated), "receipt": receipt,
        ], isError: status != 0)
    }

    private func requestApproval(_ arguments: [String: JSONValue]) async throws -> JSONValue {
        guard let action = arguments["action"]?.string, !action.isEmpty else {
            return Self.failure("action: say what you want to do")
        }
        let request = ApprovalRequest(action: action, arguments: (arguments["arguments"] ?? .object([:])).canonicalText,
                                      reason: arguments["reason"]?.string, channel: "mcp")
        if let problem = request.problem { return Self.failure(problem) }
        let device = self.device
        let report = try await ApprovalPrompt.during(request) {
            try await ApprovalPrompt.service.approve(request, device: device,
                                                     interaction: TerminalInteraction(console: Console(json: false))).0
        }
        let text = report.refusal.map { "Refused: \($0.message)" }
            ?? "Approved by the user (\(report.receipt.fields?.match ?? "touch")); digest \(report.receipt.fields?.digest ?? "")."
        return Self.result(text, structured: ["approved": .bool(report.refusal == nil), "receipt": JSONValue.from(report.receipt)],
                           isError: report.refusal != nil)
    }

    static func result(_ text: String, structured: [String: JSONValue], isError: Bool = false) -> JSONValue {
        .object(["content": .array([.object(["type": .string("text"), "text": .string(text)])]),
                 "structuredContent": .object(structured), "isError": .bool(isError)])
    }

    static func failure(_ message: String) -> JSONValue {
        .object(["content": .array([.object(["type": .string("text"), "text": .string(message)])]), "isError": .bool(true)])
    }
}
