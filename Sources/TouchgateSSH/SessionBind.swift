// OpenSSH's session-bind@openssh.com extension (PROTOCOL.agent, "session-bind"): ssh tells
// the agent which server each connection reaches, before it asks for a login signature.
// Only the layout is read here; checking the host's signature is the door's.

/// The contents of a `session-bind@openssh.com` extension request: the server's host
/// key, the session identifier, the server's signature over that identifier, and whether
/// the connection is being forwarded onward.
public struct SessionBind: Sendable, Hashable {
    /// The extension's name in ``AgentRequest/extension(name:contents:)``.
    public static let extensionName = "session-bind@openssh.com"

    /// The server's host key blob.
    public let hostKey: [UInt8]
    /// The session identifier (the first key exchange's hash), as later signed in a
    /// ``UserAuthRequest``. Its length is not checked here.
    public let sessionIdentifier: [UInt8]
    /// The server's signature blob over the session identifier, by `hostKey`.
    public let signature: [UInt8]
    /// Whether ssh is forwarding the agent to that server (rather than logging in to it).
    public let isForwarding: Bool

    /// A binding.
    public init(hostKey: [UInt8], sessionIdentifier: [UInt8], signature: [UInt8], isForwarding: Bool) {
        self.hostKey = hostKey
        self.sessionIdentifier = sessionIdentifier
        self.signature = signature
        self.isForwarding = isForwarding
    }

    /// Decodes the extension's contents (what follows its name). Throws ``SSHWireError``
    /// for a field cut short or lying about its length, a forwarding flag other than 0
    /// or 1, or bytes after it.
    public init<Contents: RandomAccessCollection<UInt8>>(contents: Contents) throws(SSHWireError) where Contents.Index == Int {
        var reader = WireCursor(contents)
        hostKey = try reader.string()
        sessionIdentifier = try reader.string()
        signature = try reader.string()
        isForwarding = try reader.bool()
        try reader.expectEnd()
    }

    /// The extension's contents.
    public var contents: [UInt8] {
        var writer = SSHWireWriter()
        writer.string(hostKey)
        writer.string(sessionIdentifier)
        writer.string(signature)
        writer.bool(isForwarding)
        return writer.bytes
    }
}
