import FoundationEssentials

/// One secret a command runs with: the environment variable it is put in and the vault
/// item it comes from (`touchgate run --secret GITHUB_TOKEN=github-token`).
public struct SecretBinding: Codable, Sendable, Equatable, Hashable {
    public var variable: String
    public var item: String
    /// The value in a file instead (in memory only, sealed, open as descriptor 3 and up):
    /// the variable holds its path, `/dev/fd/N`, for commands that read a key or token file.
    public var asFile: Bool?

    public init(variable: String, item: String, asFile: Bool = false) {
        self.variable = variable
        self.item = item
        self.asFile = asFile ? true : nil
    }

    /// `VAR=item` as typed; nil when it is not that, or VAR is not a valid variable name.
    public init?(parsing text: String, asFile: Bool = false) {
        guard let equals = text.firstIndex(of: "="), Self.isVariableName(String(text[..<equals])) else { return nil }
        let item = String(text[text.index(after: equals)...])
        guard !item.isEmpty else { return nil }
        self.init(variable: String(text[..<equals]), item: item, asFile: asFile)
    }

    /// `VAR=item`, and ` (a file)` when it is one.
    public var text: String { "\(variable)=\(item)" + (asFile == true ? " (a file)" : "") }

    /// Whether `name` can name an environment variable (letters, digits and `_`, not first a digit).
    public static func isVariableName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.enumerated().allSatisfy { index, byte in
            byte == UInt8(ascii: "_") || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
                || (index > 0 && byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
    }
}

/// What a program asks a person to approve with a touch: a command to run with secrets
/// (`touchgate run`, the MCP tool `run_with_secrets`), or an action it describes (the MCP
/// tool `request_approval`, an agent's hook). The service binds the approval to a digest
/// of all of it and of who asks (``Receipt/digest``).
public struct ApprovalRequest: Codable, Sendable, Equatable {
    /// The command and its arguments, for a run.
    public var command: [String]?
    /// The working directory the command runs in.
    public var directory: String?
    /// The secrets it runs with, in order.
    public var secrets: [SecretBinding]
    /// For an action: what it is (a tool's name: `Bash`, `deploy`).
    public var action: String?
    /// For an action: its arguments, as the agent gave them (JSON text, bound exactly).
    public var arguments: String?
    /// Why, in the asker's words.
    public var reason: String?
    /// Which door of the installed program asks (`run`, `mcp`, `approve`, `hook`): bound, so
    /// that an approval or a lease given to one never stands for another (`mcp` runs with no
    /// standard input, `run` with the caller's).
    public var channel: String?

    public init(command: [String]? = nil, directory: String? = nil, secrets: [SecretBinding] = [],
                action: String? = nil, arguments: String? = nil, reason: String? = nil, channel: String? = nil) {
        self.channel = channel
        self.command = command
        self.directory = directory
        self.secrets = secrets
        self.action = action
        self.arguments = arguments
        self.reason = reason
    }

    /// The most bytes of a request's texts together (a command line, arguments): bounded so
    /// that the prompt and the record stay readable and a request cannot fill the trail.
    public static let maximumBytes = 16 * 1024

    /// What is wrong with the request, for a usage error; nil when it can be asked.
    public var problem: String? {
        if command == nil && action == nil { return "say what to approve: a command to run, or an action" }
        if command != nil && action != nil { return "approve a command or an action, not both at once" }
        if let command, command.isEmpty || command[0].isEmpty { return "give the command to run" }
        if action != nil && !secrets.isEmpty { return "an action is approved without secrets; run a command to use them" }
        if let bad = secrets.first(where: { !SecretBinding.isVariableName($0.variable) || $0.item.isEmpty }) {
            return "'\(StoredText.escaped(bad.text))' is not VARIABLE=item"
        }
        let variables = secrets.map(\.variable)
        if Set(variables).count != variables.count { return "each variable can be given one secret" }
        let texts = (command ?? []) + [arguments, reason, directory, action, channel].compactMap { $0 }
            + secrets.flatMap { [$0.variable, $0.item] }
        // A NUL would end a word where the program reads it, after the person read all of it.
        if texts.contains(where: { $0.utf8.contains(0) }) { return "a command, argument or text holds a NUL byte" }
        let size = texts.reduce(0) { $0 + $1.utf8.count }
        if size > Self.maximumBytes { return "the request is \(size) bytes; at most \(Self.maximumBytes) can be approved" }
        return nil
    }

    /// The lines a person reads before touching: what runs or happens, where, with which
    /// secrets, and why; every text escaped (a request cannot draw on the terminal).
    public var summary: [String] {
        var lines: [String] = []
        if let command {
            lines.append("command:   " + command.map(Self.shellWord).joined(separator: " "))
            if let directory { lines.append("in:        " + Self.shown(directory)) }
            if !secrets.isEmpty {
                lines.append("secrets:   " + secrets.map { Self.shown($0.text) }.joined(separator: ", "))
            }
        }
        if let action {
            lines.append("action:    " + Self.shown(action))
            if let arguments { lines.append("arguments: " + Self.shown(arguments)) }
        }
        if let reason { lines.append("reason:    " + Self.shown(reason)) }
        if let channel { lines.append("through:   touchgate " + Self.shown(channel)) }
        // Everything bound is shown, whole: nothing is cut where a payload could hide.
        return lines
    }

    /// One line for a prompt and the audit record: `run gh pr list with GITHUB_TOKEN`,
    /// `approve Bash`.
    public var headline: String {
        if let command {
            let shown = command.map(Self.shellWord).joined(separator: " ")
            let line = "run " + (shown.count > 120 ? String(shown.prefix(120)) + "…" : shown)
            return secrets.isEmpty ? line : line + " with " + secrets.map { Self.shown($0.variable) }.joined(separator: ", ")
        }
        let shown = Self.shown(action ?? "")
        return "approve " + (shown.count > 120 ? String(shown.prefix(120)) + "…" : shown)
    }

    /// A word as a shell would need it typed, escaped for the terminal.
    static func shellWord(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_./=:,+@%".unicodeScalars.contains($0))
        }
        return plain ? word : "'" + shown(word).replacing("'", with: "'\\''") + "'"
    }

    /// Text escaped for the terminal, with the characters that show as nothing (zero-width
    /// spaces, direction marks) written out: `g\u{200B}h` is not shown as `gh`.
    static func shown(_ text: String) -> String {
        let escaped = StoredText.escaped(text)
        guard escaped.unicodeScalars.contains(where: StoredText.isInvisible) else { return escaped }
        var out = String.UnicodeScalarView()
        for scalar in escaped.unicodeScalars {
            if StoredText.isInvisible(scalar) {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}

/// What the trusted host signs for each decision on an ``ApprovalRequest``: the statement,
/// as exact bytes, and the Ed25519 signature over them by the host's audit signing key
/// (the key `touchgate audit public-key` prints). Anyone holding that public key can
/// check it offline: the signature covers `touchgate receipt v1\n` followed by the
/// statement's UTF-8 bytes.
public struct Receipt: Codable, Sendable, Equatable {
    /// The statement (``ReceiptStatement``) as JSON text, exactly as signed.
    public var statement: String
    /// The signature, hexadecimal.
    public var signature: String
    /// The signing key's public half, hexadecimal (to compare with the one you trust).
    public var publicKey: String

    public init(statement: String, signature: String, publicKey: String) {
        self.statement = statement
        self.signature = signature
        self.publicKey = publicKey
    }

    /// What the signature covers: this prefix, then the statement's bytes.
    public static let signedPrefix = "touchgate receipt v1\n"

    /// The bytes the signature covers.
    public var signedBytes: [UInt8] { Array((Self.signedPrefix + statement).utf8) }

    /// The statement's fields (nil when it is not one: a forged or damaged receipt).
    public var fields: ReceiptStatement? {
        try? WireCoding.decoder().decode(ReceiptStatement.self, from: Data(statement.utf8))
    }
}

/// The fields of a signed receipt.
public struct ReceiptStatement: Codable, Sendable, Equatable {
    /// `approved` or `refused`.
    public var decision: String
    /// SHA-256 (hex) of what was approved and who asked: the command or action, its
    /// arguments, directory, secrets and reason, and the asking processes (pid, start time,
    /// executable each). Equal digests are the same request from the same processes.
    public var digest: String
    public var command: [String]?
    public var directory: String?
    /// `VARIABLE=item`, never a value.
    public var secrets: [String]
    public var action: String?
    /// SHA-256 (hex) of the action's arguments text.
    public var argumentsDigest: String?
    public var reason: String?
    /// The process that asked (`pid 41 /usr/bin/touchgate at touchgated's socket`).
    public var requester: String
    /// The executables of its parents, nearest first.
    public var chain: [String]
    /// Its control group (`/user.slice/…`), when known.
    public var cgroup: String?
    /// Whose vault decided.
    public var user: String
    /// What decided: `finger right-index` or the refusal's words.
    public var match: String?
    /// Why it was refused.
    public var refusal: String?
    /// When, ISO 8601 in UTC.
    public var time: String

    public init(decision: String, digest: String, command: [String]?, directory: String?, secrets: [String],
                action: String?, argumentsDigest: String?, reason: String?, requester: String, chain: [String],
                cgroup: String?, user: String, match: String?, refusal: String?, time: String) {
        self.decision = decision
        self.digest = digest
        self.command = command
        self.directory = directory
        self.secrets = secrets
        self.action = action
        self.argumentsDigest = argumentsDigest
        self.reason = reason
        self.requester = requester
        self.chain = chain
        self.cgroup = cgroup
        self.user = user
        self.match = match
        self.refusal = refusal
        self.time = time
    }

    /// Whether the host approved.
    public var approved: Bool { decision == "approved" }
}

/// The answer to an approval: the signed receipt, and when refused, why (the request
/// itself succeeded: a refusal is a decision, signed like an approval). The secrets of an
/// approved run travel beside it as secret bytes (``PackedValues``, in the request's order).
public struct ApprovalReport: Codable, Sendable, Equatable {
    public var receipt: Receipt
    public var refusal: ServiceError?

    public init(receipt: Receipt, refusal: ServiceError?) {
        self.receipt = receipt
        self.refusal = refusal
    }
}

/// What `touchgate receipt verify` found.
public struct ReceiptCheckReport: Codable, Sendable, Equatable {
    /// Whether the signature holds for the key checked against.
    public var valid: Bool
    /// Whether it holds and records an approval (a valid receipt may record a refusal).
    public var approved: Bool
    /// The key checked against, hexadecimal.
    public var publicKey: String
    /// The statement, when the signature holds.
    public var statement: ReceiptStatement?
    /// Why it does not hold.
    public var problem: String?

    public init(valid: Bool, publicKey: String, statement: ReceiptStatement?, problem: String?) {
        self.approved = valid && statement?.approved == true
        self.valid = valid
        self.publicKey = publicKey
        self.statement = statement
        self.problem = problem
    }
}
