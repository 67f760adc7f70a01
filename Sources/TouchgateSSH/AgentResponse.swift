// The agent's answers. The door encodes them; the decoder is for clients and tests.

/// A key the agent lists in an identities answer.
public struct AgentIdentity: Sendable, Hashable {
    /// The public key blob (for Ed25519, ``SSHPublicKey/blob``).
    public var keyBlob: [UInt8]
    /// The comment shown by `ssh-add -l`; UTF-8 without NUL, or clients cannot read it back.
    public var comment: String

    /// A listed key.
    public init(keyBlob: [UInt8], comment: String) {
        self.keyBlob = keyBlob
        self.comment = comment
    }
}

/// One answer from the agent.
public enum AgentResponse: Sendable, Hashable {
    /// `SSH_AGENT_FAILURE` (5): refused, unknown or failed; the client learns no reason.
    case failure
    /// `SSH_AGENT_SUCCESS` (6).
    case success
    /// `SSH_AGENT_IDENTITIES_ANSWER` (12): the keys, each with its comment.
    case identities([AgentIdentity])
    /// `SSH_AGENT_SIGN_RESPONSE` (14): a signature blob (for Ed25519,
    /// ``SSHPublicKey/signatureBlob(_:)``).
    case signature([UInt8])
    /// `SSH_AGENT_EXTENSION_FAILURE` (28): an extension that is known but failed.
    case extensionFailure
    /// `SSH_AGENT_EXTENSION_RESPONSE` (29): an extension's own answer, named, with its
    /// contents (the `query` extension's list of names).
    case extensionResponse(name: String, contents: [UInt8])
    /// `SSH_AGENT_SUCCESS` followed by an extension's reply (PROTOCOL.agent lets an
    /// extension answer with contents of its own); never empty, or it would be ``success``.
    case extensionReply([UInt8])

    /// The message body.
    public var body: [UInt8] {
        var writer = SSHWireWriter()
        switch self {
        case .failure:
            writer.byte(AgentNumber.failure)
        case .success:
            writer.byte(AgentNumber.success)
        case .identities(let identities):
            writer.byte(AgentNumber.identitiesAnswer)
            writer.uint32(UInt32(identities.count))
            for identity in identities {
                writer.string(identity.keyBlob)
                writer.string(identity.comment)
            }
        case .signature(let blob):
            writer.byte(AgentNumber.signResponse)
            writer.string(blob)
        case .extensionFailure:
            writer.byte(AgentNumber.extensionFailure)
        case .extensionReply(let contents):
            writer.byte(AgentNumber.success)
            writer.raw(contents)
        case .extensionResponse(let name, let contents):
            writer.byte(AgentNumber.extensionResponse)
            writer.string(name)
            writer.raw(contents)
        }
        return writer.bytes
    }

    /// The answer to the `query` extension (RFC 9987; draft-miller-ssh-agent-14, section
    /// 3.8.1): the names of the extensions this agent knows, as a count and strings.
    public static func query(_ names: [String]) -> AgentResponse {
        var writer = SSHWireWriter()
        writer.uint32(UInt32(names.count))
        for name in names { writer.string(name) }
        return .extensionResponse(name: "query", contents: writer.bytes)
    }

    /// The whole message to send: ``body`` with its length prefix.
    public var frame: [UInt8] { AgentFrame.frame(body) }

    /// Decodes an answer's body, as a client reads it.
    ///
    /// Throws ``SSHWireError/unknownMessage(type:)`` for any other type, and the usual
    /// errors for a malformed body (nothing is reserved for the announced number of keys,
    /// so a count the bytes cannot hold only runs out of bytes).
    public init<Body: RandomAccessCollection<UInt8>>(body: Body) throws(SSHWireError) where Body.Index == Int {
        var reader = WireCursor(body)
        guard !reader.isAtEnd else { throw .emptyMessage }
        switch try reader.byte() {
        case AgentNumber.failure:
            self = .failure
        case AgentNumber.success:
            let rest = reader.restRange()
            self = rest.isEmpty ? .success : .extensionReply(Array(body[rest]))
        case AgentNumber.identitiesAnswer:
            let count = try reader.uint32()
            var identities: [AgentIdentity] = []
            for _ in 0..<count {
                let keyBlob = try reader.string()
                identities.append(AgentIdentity(keyBlob: keyBlob, comment: try reader.text()))
            }
            self = .identities(identities)
        case AgentNumber.signResponse:
            self = .signature(try reader.string())
        case AgentNumber.extensionFailure:
            self = .extensionFailure
        case AgentNumber.extensionResponse:
            let name = try reader.text()
            self = .extensionResponse(name: name, contents: Array(body[reader.restRange()]))
        case let type:
            throw .unknownMessage(type: type)
        }
        try reader.expectEnd()
    }
}
