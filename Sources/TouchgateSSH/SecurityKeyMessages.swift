// Touchgate's own agent extensions, which its OpenSSH security-key provider
// (libtouchgate-sk.so, sk/ in the tree) sends through SSH_AGENTC_EXTENSION: make a key
// for an application, and sign with it. The provider is C inside ssh-sk-helper; these are
// the bytes it and the agent agree on, and docs/PROTOCOL.md describes them.

/// What OpenSSH's security-key API calls the key types (`SSH_SK_ECDSA`, `SSH_SK_ED25519`).
public enum SecurityKeyAlgorithm {
    /// `SSH_SK_ECDSA`: ECDSA P-256, which this provider does not make.
    public static let ecdsa: UInt32 = 0
    /// `SSH_SK_ED25519`.
    public static let ed25519: UInt32 = 1
}

/// The flags of OpenSSH's security-key API, which a signature carries and sshd checks.
public struct SecurityKeyFlags: OptionSet, Sendable, Hashable {
    /// The flags as sent; bits this module does not name are kept.
    public let rawValue: UInt8
    /// Flags from their wire value.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `SSH_SK_USER_PRESENCE_REQD` (0x01): asked of a key, a touch per signature; in a
    /// signature, someone acted for this one.
    public static let userPresence = SecurityKeyFlags(rawValue: 0x01)
    /// `SSH_SK_USER_VERIFICATION_REQD` (0x04): in a signature, the user was verified (here:
    /// an enrolled finger matched for this signature). sshd's `verify-required` needs it.
    public static let userVerification = SecurityKeyFlags(rawValue: 0x04)
    /// `SSH_SK_RESIDENT_KEY` (0x20): a key the authenticator can list; not made here.
    public static let resident = SecurityKeyFlags(rawValue: 0x20)
}

/// A request from the security-key provider, read from an extension message.
public enum SecurityKeyRequest: Sendable, Equatable, CustomStringConvertible {
    /// `sk-enroll@touchgate`: make a key for `application` (`ssh:` unless ssh-keygen's
    /// `-O application=` chose another), named `user` when ssh-keygen's `-O user=` gave one.
    case enroll(algorithm: UInt32, application: String, flags: SecurityKeyFlags, user: String)
    /// `sk-sign@touchgate`: sign `data` with the key `keyHandle` names, for `application`.
    case sign(algorithm: UInt32, application: String, keyHandle: [UInt8], flags: SecurityKeyFlags, data: [UInt8])

    /// The extension name of an enrollment.
    public static let enrollName = "sk-enroll@touchgate"
    /// The extension name of a signature.
    public static let signName = "sk-sign@touchgate"

    /// Reads the contents of extension `name`; nil for an extension that is not one of these.
    ///
    /// Enroll: `uint32 algorithm, string application, byte flags, string user`.
    /// Sign: `uint32 algorithm, string application, string key handle, byte flags, string data`.
    /// Throws ``SSHWireError`` when the contents are not exactly that.
    public init?<Contents: RandomAccessCollection<UInt8>>(extension name: String, contents: Contents) throws(SSHWireError)
    where Contents.Index == Int {
        var reader = WireCursor(contents)
        switch name {
        case Self.enrollName:
            let algorithm = try reader.uint32()
            let application = try reader.text()
            let flags = SecurityKeyFlags(rawValue: try reader.byte())
            self = .enroll(algorithm: algorithm, application: application, flags: flags, user: try reader.text())
        case Self.signName:
            let algorithm = try reader.uint32()
            let application = try reader.text()
            let keyHandle = try reader.string()
            let flags = SecurityKeyFlags(rawValue: try reader.byte())
            self = .sign(algorithm: algorithm, application: application, keyHandle: keyHandle, flags: flags,
                         data: try reader.string())
        default:
            return nil
        }
        try reader.expectEnd()
    }

    /// The extension name and contents, as the provider writes them.
    public var encoded: (name: String, contents: [UInt8]) {
        var writer = SSHWireWriter()
        switch self {
        case .enroll(let algorithm, let application, let flags, let user):
            writer.uint32(algorithm)
            writer.string(application)
            writer.byte(flags.rawValue)
            writer.string(user)
            return (Self.enrollName, writer.bytes)
        case .sign(let algorithm, let application, let keyHandle, let flags, let data):
            writer.uint32(algorithm)
            writer.string(application)
            writer.string(keyHandle)
            writer.byte(flags.rawValue)
            writer.string(data)
            return (Self.signName, writer.bytes)
        }
    }

    /// What was asked, without the data: fit for a log.
    public var description: String {
        switch self {
        case .enroll(let algorithm, let application, let flags, let user):
            "make a security key (algorithm \(algorithm), application \(SSHWireError.shown(application)), "
                + "flags \(flags.rawValue), name \(SSHWireError.shown(user)))"
        case .sign(let algorithm, let application, let keyHandle, let flags, let data):
            "sign \(data.count) bytes with a security key (algorithm \(algorithm), application "
                + "\(SSHWireError.shown(application)), a \(keyHandle.count)-byte handle, flags \(flags.rawValue))"
        }
    }
}

/// The provider's answers, sent as the contents of `SSH_AGENT_SUCCESS`.
public enum SecurityKeyReply: Sendable, Equatable {
    /// A key made: its 32-byte Ed25519 public key, the handle that names it in later
    /// signatures, and the flags it was made with.
    case enrolled(publicKey: [UInt8], keyHandle: [UInt8], flags: SecurityKeyFlags)
    /// A signature: the flags it carries, the counter, the 64-byte Ed25519 signature.
    case signed(flags: SecurityKeyFlags, counter: UInt32, signature: [UInt8])

    /// The contents after the success byte.
    public var contents: [UInt8] {
        var writer = SSHWireWriter()
        switch self {
        case .enrolled(let publicKey, let keyHandle, let flags):
            writer.string(publicKey)
            writer.string(keyHandle)
            writer.byte(flags.rawValue)
        case .signed(let flags, let counter, let signature):
            writer.byte(flags.rawValue)
            writer.uint32(counter)
            writer.string(signature)
        }
        return writer.bytes
    }
}

/// What a security key signs, as OpenSSH's `sk-ssh-ed25519@openssh.com` verifies it (the
/// FIDO assertion layout): SHA-256 of the application, the flags, the counter (big-endian),
/// then SHA-256 of the data.
public enum SecurityKeySignedMessage {
    /// The bytes the Ed25519 key signs. `sha256` hashes its input (libsodium in the service).
    public static func bytes(application: String, flags: SecurityKeyFlags, counter: UInt32, data: [UInt8],
                             sha256: ([UInt8]) -> [UInt8]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.raw(sha256(Array(application.utf8)))
        writer.byte(flags.rawValue)
        writer.uint32(counter)
        writer.raw(sha256(data))
        return writer.bytes
    }

    /// The public key blob of a security key: string `sk-ssh-ed25519@openssh.com`, string
    /// the 32-byte key, string the application.
    public static func publicKeyBlob(_ publicKey: [UInt8], application: String) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.string(keyTypeName)
        writer.string(publicKey)
        writer.string(application)
        return writer.bytes
    }

    /// The key type's name.
    public static let keyTypeName = "sk-ssh-ed25519@openssh.com"
}
