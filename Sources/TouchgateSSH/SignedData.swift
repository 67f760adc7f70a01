// What a sign request asks to be signed, recognised so that the fingerprint prompt can say
// what the touch is for ("log in as git to the server with this host key", "sign a git
// commit"). Recognising is not trusting: any local client can send bytes shaped like
// these, so the door shows them as claims and binds them to a session where it can.

/// The data of a sign request, recognised by its shape.
public enum SignedData: Sendable, Hashable {
    /// An SSH public key login (RFC 4252 §7), as ssh signs it.
    case userAuthentication(UserAuthRequest)
    /// A signature by `ssh-keygen -Y sign` (OpenSSH's PROTOCOL.sshsig): git, files, allowed signers.
    case sshsig(SSHSignatureRequest)
    /// Anything else, of this many bytes.
    case other(byteCount: Int)

    /// Recognises `data`. Never throws: bytes that are not exactly one of the known shapes
    /// (with nothing after it) are ``other(byteCount:)``.
    public static func classify<Bytes: RandomAccessCollection<UInt8>>(_ data: Bytes) -> SignedData where Bytes.Index == Int {
        if let request = SSHSignatureRequest(data) { return .sshsig(request) }
        if let request = UserAuthRequest(data) { return .userAuthentication(request) }
        return .other(byteCount: data.count)
    }
}

/// The data ssh signs to log in with a public key (RFC 4252 §7): the session identifier,
/// `SSH_MSG_USERAUTH_REQUEST`, the user, the service, the method, TRUE, the algorithm, the
/// public key and, for OpenSSH's host-bound method, the server's host key.
public struct UserAuthRequest: Sendable, Hashable {
    /// How the key is offered.
    public enum Method: Sendable, Hashable {
        /// `publickey`: RFC 4252's method.
        case publicKey
        /// `publickey-hostbound-v00@openssh.com` (OpenSSH 8.9 and later): the same, with the
        /// server's host key blob signed too, so the signature is good for that server only.
        case hostBound(hostKey: [UInt8])

        /// The method's name on the wire.
        public var name: String {
            switch self {
            case .publicKey: Self.publicKeyName
            case .hostBound: Self.hostBoundName
            }
        }

        static let publicKeyName = "publickey"
        static let hostBoundName = "publickey-hostbound-v00@openssh.com"
    }

    /// The SSH session's identifier (the exchange hash of its first key exchange).
    public let sessionIdentifier: [UInt8]
    /// The user name on the server.
    public let user: String
    /// The service asked for; OpenSSH always asks for `ssh-connection`.
    public let service: String
    /// The method, with the host key for the host-bound one.
    public let method: Method
    /// The signature algorithm named (`ssh-ed25519`, `rsa-sha2-512`, …).
    public let algorithm: String
    /// The public key blob offered.
    public let publicKey: [UInt8]

    /// The server's host key blob, which only the host-bound method carries.
    public var hostKey: [UInt8]? {
        if case .hostBound(let hostKey) = method { hostKey } else { nil }
    }

    /// A login request.
    public init(sessionIdentifier: [UInt8], user: String, service: String = "ssh-connection",
                method: Method, algorithm: String, publicKey: [UInt8]) {
        self.sessionIdentifier = sessionIdentifier
        self.user = user
        self.service = service
        self.method = method
        self.algorithm = algorithm
        self.publicKey = publicKey
    }

    /// `SSH_MSG_USERAUTH_REQUEST`.
    static let messageNumber: UInt8 = 50

    /// Reads a whole login request, or nil. As OpenSSH's agent does, it wants a non-empty
    /// session identifier and TRUE exactly (1) for "a signature follows".
    init?<Bytes: RandomAccessCollection<UInt8>>(_ data: Bytes) where Bytes.Index == Int {
        var reader = WireCursor(data)
        guard let sessionIdentifier = try? reader.string(), !sessionIdentifier.isEmpty,
              (try? reader.byte()) == Self.messageNumber,
              let user = try? reader.text(),
              let service = try? reader.text(),
              let methodName = try? reader.text(),
              (try? reader.bool()) == true,
              let algorithm = try? reader.text(),
              let publicKey = try? reader.string()
        else { return nil }
        switch methodName {
        case Method.publicKeyName:
            method = .publicKey
        case Method.hostBoundName:
            guard let hostKey = try? reader.string() else { return nil }
            method = .hostBound(hostKey: hostKey)
        default:
            return nil
        }
        guard reader.isAtEnd else { return nil }
        self.sessionIdentifier = sessionIdentifier
        self.user = user
        self.service = service
        self.algorithm = algorithm
        self.publicKey = publicKey
    }

    /// The bytes signed for this request.
    public var encoded: [UInt8] {
        var writer = SSHWireWriter()
        writer.string(sessionIdentifier)
        writer.byte(Self.messageNumber)
        writer.string(user)
        writer.string(service)
        writer.string(method.name)
        writer.bool(true)
        writer.string(algorithm)
        writer.string(publicKey)
        if let hostKey { writer.string(hostKey) }
        return writer.bytes
    }
}

/// The data `ssh-keygen -Y sign` has the agent sign (PROTOCOL.sshsig): "SSHSIG", the
/// namespace, an empty reserved field, the hash algorithm and the message's hash. The
/// message itself never reaches the agent.
public struct SSHSignatureRequest: Sendable, Hashable {
    /// The hash the message was reduced to.
    public enum HashAlgorithm: String, Sendable, Hashable, CaseIterable {
        /// SHA-256 (32 bytes).
        case sha256
        /// SHA-512 (64 bytes), what ssh-keygen uses unless told otherwise.
        case sha512

        /// The hash's length in bytes.
        public var digestLength: Int {
            switch self {
            case .sha256: 32
            case .sha512: 64
            }
        }
    }

    /// What the signature is for, chosen by the signer: `git` for commits and tags,
    /// `file`, or any other string; a verifier checks it, so a signature made for one
    /// namespace is not accepted for another.
    public let namespace: String
    /// How the message was hashed.
    public let hashAlgorithm: HashAlgorithm
    /// The message's hash.
    public let hash: [UInt8]

    /// A request. Traps unless `hash` is as long as the algorithm's output and the
    /// namespace is not empty (programmer errors).
    public init(namespace: String, hashAlgorithm: HashAlgorithm, hash: [UInt8]) {
        precondition(!namespace.isEmpty, "an SSHSIG namespace is not empty")
        precondition(hash.count == hashAlgorithm.digestLength, "a \(hashAlgorithm) hash is \(hashAlgorithm.digestLength) bytes")
        self.namespace = namespace
        self.hashAlgorithm = hashAlgorithm
        self.hash = hash
    }

    /// The six bytes every such blob starts with.
    static let magic: [UInt8] = Array("SSHSIG".utf8)

    /// Reads a whole request, or nil. Stricter than OpenSSH's agent, which only checks the
    /// layout: the namespace must not be empty (ssh-keygen refuses to sign without one),
    /// the reserved field must be empty (a non-empty one is a format we cannot describe),
    /// and the hash must be SHA-256 or SHA-512 and as long as that hash.
    init?<Bytes: RandomAccessCollection<UInt8>>(_ data: Bytes) where Bytes.Index == Int {
        guard data.starts(with: Self.magic) else { return nil }
        var reader = WireCursor(data.dropFirst(Self.magic.count))
        guard let namespace = try? reader.text(), !namespace.isEmpty,
              let reserved = try? reader.stringRange(), reserved.isEmpty,
              let algorithmName = try? reader.text(),
              let hashAlgorithm = HashAlgorithm(rawValue: algorithmName),
              let hash = try? reader.string(), hash.count == hashAlgorithm.digestLength,
              reader.isAtEnd
        else { return nil }
        self.init(namespace: namespace, hashAlgorithm: hashAlgorithm, hash: hash)
    }

    /// The bytes signed for this request.
    public var encoded: [UInt8] {
        var writer = SSHWireWriter()
        writer.raw(Self.magic)
        writer.string(namespace)
        writer.string([UInt8]())
        writer.string(hashAlgorithm.rawValue)
        writer.string(hash)
        return writer.bytes
    }
}
