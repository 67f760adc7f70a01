// What can be wrong with bytes a peer sent over the SSH agent protocol. Every decoder in
// this module throws only this type, so the agent door can answer SSH_AGENT_FAILURE and
// log the reason without a cast.
import TouchgateBasics

/// Why SSH wire bytes could not be read.
///
/// The description is written for a person reading a log. It never shows field contents
/// except names a peer chose (a key type, a constraint extension), which are escaped and
/// cut short; secret fields (private keys, passphrases) are never named at all.
public enum SSHWireError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The bytes ended inside a fixed-size field: a byte, a boolean, a `uint32` or a length.
    case truncated
    /// A length prefix promises more bytes than are left (an error, never an allocation).
    case lengthTooLarge(declared: UInt32, remaining: Int)
    /// Bytes are left after what should have been the last field.
    case trailingBytes(count: Int)
    /// A text field is not UTF-8, or holds a NUL (OpenSSH reads text as C strings, so a NUL
    /// would make it read a shorter name than we would).
    case invalidText
    /// A boolean byte other than 0 or 1 (RFC 4251 reads any other value as true; refusing it
    /// keeps one reading per message and lets every message be written back unchanged).
    case invalidBoolean(UInt8)
    /// A message with no bytes at all, not even its type.
    case emptyMessage
    /// An answer of a type this module does not know (an unknown request is not an error:
    /// it decodes as ``AgentRequest/unknown(type:)``).
    case unknownMessage(type: UInt8)
    /// A frame whose length prefix is over ``AgentFrame/maximumLength``.
    case frameTooLarge(declared: UInt32)
    /// A key of a type this agent cannot hold (anything but `ssh-ed25519`).
    case unsupportedKeyType(String)
    /// An Ed25519 key field of the wrong size.
    case invalidKeyLength(expected: Int, actual: Int)
    /// An Ed25519 private key whose public half is not the public key sent with it.
    case keyMismatch
    /// A key constraint type this agent does not know.
    case unknownConstraint(type: UInt8)
    /// A constraint extension this agent does not know. Its contents have no length of
    /// their own, so the constraints after it cannot be read either.
    case unsupportedConstraintExtension(String)
    /// The same constraint given twice (OpenSSH's agent refuses that too).
    case repeatedConstraint(type: UInt8)
    /// An mpint that is negative, not in its shortest form, or too large for its field.
    case invalidInteger
    /// A destination constraint (`ssh-add -h`) this agent cannot keep, and why.
    case invalidDestination(String)

    /// One sentence for a log, without field contents.
    public var description: String {
        switch self {
        case .truncated:
            "the SSH agent message ends in the middle of a field"
        case .lengthTooLarge(let declared, let remaining):
            "a field in the SSH agent message claims \(declared) bytes but only \(remaining) follow"
        case .trailingBytes(let count):
            "the SSH agent message has \(count) unexpected bytes after its last field"
        case .invalidText:
            "a text field in the SSH agent message is not UTF-8 without NUL characters"
        case .invalidBoolean(let value):
            "a boolean in the SSH agent message is \(value), not 0 or 1"
        case .emptyMessage:
            "the SSH agent message is empty"
        case .unknownMessage(let type):
            "SSH agent message type \(type) is not known"
        case .frameTooLarge(let declared):
            "the SSH agent message claims \(declared) bytes, over the limit of \(AgentFrame.maximumLength)"
        case .unsupportedKeyType(let name):
            "key type \(Self.shown(name)) is not supported (only ssh-ed25519 and ecdsa-sha2-nistp256 are)"
        case .invalidKeyLength(let expected, let actual):
            "a key field is \(actual) bytes long instead of \(expected)"
        case .keyMismatch:
            "the private key does not belong to the public key sent with it"
        case .unknownConstraint(let type):
            "key constraint type \(type) is not supported"
        case .unsupportedConstraintExtension(let name):
            "key constraint extension \(Self.shown(name)) is not supported"
        case .repeatedConstraint(let type):
            "key constraint type \(type) is given more than once"
        case .invalidInteger:
            "an integer in the SSH agent message is negative, padded or too large"
        case .invalidDestination(let why):
            "the key's destination constraint (ssh-add -h) \(why)"
        }
    }

    /// A name a peer chose, quoted, with control characters escaped and cut to a length a
    /// log line can hold (the message may carry a name of up to 256 KiB). The cut counts
    /// what is shown, escapes included, and never splits one.
    static func shown(_ name: String) -> String {
        let limit = 64
        var shown = ""
        for character in name {
            let escaped = StoredText.escaped(String(character))
            guard shown.count + escaped.count <= limit else { return "\"" + shown + "\"…" }
            shown += escaped
        }
        return "\"" + shown + "\""
    }
}
