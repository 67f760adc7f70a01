// The requests a client (ssh, ssh-add, ssh-keygen -Y) sends the agent, decoded from one
// message body. Only what this agent can act on is decoded in full; the rest is named so
// the door can refuse it.
public import TouchgateBasics

/// One request to the agent, decoded from a message body (the bytes after the length
/// prefix; see ``AgentFrame``).
///
/// Secret fields (an added private key, a lock passphrase) are copied from the body into
/// ``SecretBytes`` and nowhere else; the body itself is the caller's to keep in secret
/// memory and wipe. The description never shows them.
public enum AgentRequest: Sendable, Equatable, CustomStringConvertible {
    /// `SSH_AGENTC_REQUEST_IDENTITIES` (11): list the keys.
    case requestIdentities
    /// `SSH_AGENTC_SIGN_REQUEST` (13): sign `data` with the key whose public blob is `keyBlob`.
    case sign(keyBlob: [UInt8], data: [UInt8], flags: AgentSignFlags)
    /// `SSH_AGENTC_ADD_IDENTITY` (17) or `SSH_AGENTC_ADD_ID_CONSTRAINED` (25): add a key.
    case add(AgentKeyAddition)
    /// `SSH_AGENTC_REMOVE_IDENTITY` (18): remove the key whose public blob is `keyBlob`.
    case remove(keyBlob: [UInt8])
    /// `SSH_AGENTC_REMOVE_ALL_IDENTITIES` (19).
    case removeAll
    /// `SSH_AGENTC_LOCK` (22): refuse everything until unlocked with the same passphrase.
    case lock(passphrase: SecretBytes)
    /// `SSH_AGENTC_UNLOCK` (23).
    case unlock(passphrase: SecretBytes)
    /// `SSH_AGENTC_EXTENSION` (27): a named extension and its contents, to be read by
    /// whoever knows that extension (``SessionBind`` for `session-bind@openssh.com`).
    case `extension`(name: String, contents: [UInt8])
    /// Any other message type, to be answered with `SSH_AGENT_FAILURE`. Its body is not read.
    case unknown(type: UInt8)

    /// Decodes one message body.
    ///
    /// Throws ``SSHWireError`` when the body is not a well-formed request of its type: an
    /// empty body, a field cut short or lying about its length, bytes after the last
    /// field, an add of a key type other than `ssh-ed25519`
    /// (``SSHWireError/unsupportedKeyType(_:)``), an unknown or repeated constraint. A
    /// type this module does not know is not an error but ``unknown(type:)``.
    public init<Body: RandomAccessCollection<UInt8>>(body: Body) throws(SSHWireError) where Body.Index == Int {
        var reader = WireCursor(body)
        guard !reader.isAtEnd else { throw .emptyMessage }
        let type = try reader.byte()
        switch type {
        case AgentNumber.requestIdentities:
            self = .requestIdentities
        case AgentNumber.signRequest:
            let keyBlob = try reader.string()
            let data = try reader.string()
            self = .sign(keyBlob: keyBlob, data: data, flags: AgentSignFlags(rawValue: try reader.uint32()))
        case AgentNumber.addIdentity, AgentNumber.addIdentityConstrained:
            self = .add(try AgentKeyAddition(reading: &reader, constrained: type == AgentNumber.addIdentityConstrained))
        case AgentNumber.removeIdentity:
            self = .remove(keyBlob: try reader.string())
        case AgentNumber.removeAllIdentities:
            self = .removeAll
        case AgentNumber.lock:
            self = .lock(passphrase: try reader.secret())
        case AgentNumber.unlock:
            self = .unlock(passphrase: try reader.secret())
        case AgentNumber.extension:
            let name = try reader.text()
            let contents = reader.restRange()
            self = .extension(name: name, contents: Array(body[contents]))
        default:
            self = .unknown(type: type)
            return
        }
        try reader.expectEnd()
    }

    /// What was asked, with sizes and names but no key, data or passphrase: fit for a log.
    public var description: String {
        switch self {
        case .requestIdentities:
            "request identities"
        case .sign(let keyBlob, let data, let flags):
            "sign \(data.count) bytes with the key of a \(keyBlob.count)-byte blob, flags \(flags.rawValue)"
        case .add(let addition):
            "add \(addition)"
        case .remove(let keyBlob):
            "remove the key of a \(keyBlob.count)-byte blob"
        case .removeAll:
            "remove all identities"
        case .lock:
            "lock"
        case .unlock:
            "unlock"
        case .extension(let name, let contents):
            "extension \(SSHWireError.shown(name)) with \(contents.count) bytes"
        case .unknown(let type):
            "unknown message type \(type)"
        }
    }

    /// Equal requests; secret fields are compared in constant time.
    public static func == (lhs: AgentRequest, rhs: AgentRequest) -> Bool {
        switch (lhs, rhs) {
        case (.requestIdentities, .requestIdentities), (.removeAll, .removeAll):
            true
        case let (.sign(lhsKey, lhsData, lhsFlags), .sign(rhsKey, rhsData, rhsFlags)):
            lhsKey == rhsKey && lhsData == rhsData && lhsFlags == rhsFlags
        case let (.add(lhsAddition), .add(rhsAddition)):
            lhsAddition == rhsAddition
        case let (.remove(lhsKey), .remove(rhsKey)):
            lhsKey == rhsKey
        case let (.lock(lhsPassphrase), .lock(rhsPassphrase)), let (.unlock(lhsPassphrase), .unlock(rhsPassphrase)):
            lhsPassphrase.constantTimeEquals(rhsPassphrase)
        case let (.extension(lhsName, lhsContents), .extension(rhsName, rhsContents)):
            lhsName == rhsName && lhsContents == rhsContents
        case let (.unknown(lhsType), .unknown(rhsType)):
            lhsType == rhsType
        default:
            false
        }
    }
}

/// The flags of a sign request. They choose the hash of an RSA signature; an Ed25519
/// signature has one form and ignores them.
public struct AgentSignFlags: OptionSet, Sendable, Hashable {
    /// The flags as sent; bits this module does not name are kept.
    public let rawValue: UInt32
    /// Flags from their wire value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// `SSH_AGENT_RSA_SHA2_256` (2): an `rsa-sha2-256` signature.
    public static let rsaSHA256 = AgentSignFlags(rawValue: 2)
    /// `SSH_AGENT_RSA_SHA2_512` (4): an `rsa-sha2-512` signature.
    public static let rsaSHA512 = AgentSignFlags(rawValue: 4)
}

/// A limit on an added key's use.
public enum AgentConstraint: Sendable, Hashable, CustomStringConvertible {
    /// `SSH_AGENT_CONSTRAIN_LIFETIME` (1): forget the key after this many seconds.
    case lifetime(seconds: UInt32)
    /// `SSH_AGENT_CONSTRAIN_CONFIRM` (2): ask before each use.
    case confirm
    /// `restrict-destination-v00@openssh.com` (`ssh-add -h`): the hops the key may be used over.
    case destinations([AgentDestination])

    /// `lifetime 60 s`, `confirm` or `destinations a, a>b`.
    public var description: String {
        switch self {
        case .lifetime(let seconds): "lifetime \(seconds) s"
        case .confirm: "confirm"
        case .destinations(let hops): "destinations " + hops.map(\.description).joined(separator: ", ")
        }
    }

    /// The constraint's type byte.
    var number: UInt8 {
        switch self {
        case .lifetime: AgentNumber.constrainLifetime
        case .confirm: AgentNumber.constrainConfirm
        case .destinations: AgentNumber.constrainExtension
        }
    }
}

/// One hop an added key may be used over, as `ssh-add -h` sends it (OpenSSH's
/// PROTOCOL.agent, `restrict-destination-v00@openssh.com`): from a host (none: the machine
/// the agent runs on) to a host, each known by its host keys, optionally as one user there.
public struct AgentDestination: Sendable, Hashable, CustomStringConvertible {
    /// The constraint extension's name.
    public static let extensionName = "restrict-destination-v00@openssh.com"
    /// The most hops, and host keys per hop, one key may carry (ssh-add sends a handful).
    static let maximumCount = 1024

    /// The host the hop starts from, as named to ssh-add; empty for the agent's machine.
    public let fromHost: String
    /// Its host key blobs (none for the agent's machine).
    public let fromKeys: [[UInt8]]
    /// The user the hop may log in as (a pattern); empty for any.
    public let toUser: String
    /// The host the hop leads to, as named to ssh-add.
    public let toHost: String
    /// Its host key blobs: at least one.
    public let toKeys: [[UInt8]]

    public init(fromHost: String, fromKeys: [[UInt8]], toUser: String, toHost: String, toKeys: [[UInt8]]) {
        self.fromHost = fromHost
        self.fromKeys = fromKeys
        self.toUser = toUser
        self.toHost = toHost
        self.toKeys = toKeys
    }

    /// `first>user@second`, names escaped.
    public var description: String {
        StoredText.hop(from: fromHost.isEmpty ? nil : fromHost, user: toUser.isEmpty ? nil : toUser, to: toHost)
    }

    /// The extension's contents, after its name: one string holding each hop as a string of
    /// the from-host, the to-host and a reserved string.
    static func readAll<Bytes>(_ reader: inout WireCursor<Bytes>) throws(SSHWireError) -> [AgentDestination] {
        var all = WireCursor(Array(reader.bytes[try reader.stringRange()]))
        var hops: [AgentDestination] = []
        while !all.isAtEnd {
            guard hops.count < maximumCount else { throw .invalidDestination("has more than \(maximumCount) hops") }
            var one = WireCursor(Array(all.bytes[try all.stringRange()]))
            let from = try host(&one)
            let to = try host(&one)
            guard try one.stringRange().isEmpty else { throw .invalidDestination("sets a reserved field") }
            guard one.isAtEnd else { throw .trailingBytes(count: one.remaining) }
            guard from.user.isEmpty else { throw .invalidDestination("names a user on the host a hop starts from") }
            guard !to.name.isEmpty, !to.keys.isEmpty else { throw .invalidDestination("has a hop to no known host") }
            guard from.name.isEmpty == from.keys.isEmpty else {
                throw .invalidDestination("has a hop from a host with no known host key")
            }
            hops.append(AgentDestination(fromHost: from.name, fromKeys: from.keys, toUser: to.user, toHost: to.name,
                                         toKeys: to.keys))
        }
        guard !hops.isEmpty else { throw .invalidDestination("has no hop") }
        return hops
    }

    /// One end of a hop: a user, a host name, a reserved string and the host's keys, each
    /// a key blob and whether it is a certificate authority's.
    private static func host(_ reader: inout WireCursor<[UInt8]>) throws(SSHWireError)
        -> (user: String, name: String, keys: [[UInt8]]) {
        var end = WireCursor(Array(reader.bytes[try reader.stringRange()]))
        let user = try end.text()
        let name = try end.text()
        guard try end.stringRange().isEmpty else { throw .invalidDestination("sets a reserved field") }
        var keys: [[UInt8]] = []
        while !end.isAtEnd {
            guard keys.count < maximumCount else { throw .invalidDestination("names more than \(maximumCount) host keys") }
            let blob = try end.string()
            guard try !end.bool() else {
                throw .invalidDestination("names a host certificate authority, which Touchgate does not check; "
                                          + "give the hosts' own keys (known_hosts lines without @cert-authority)")
            }
            keys.append(blob)
        }
        return (user, name, keys)
    }

    /// The extension's contents as ``readAll(_:)`` reads them (tests and the fuzz target).
    package static func encoded(_ hops: [AgentDestination]) -> [UInt8] {
        func end(_ user: String, _ name: String, _ keys: [[UInt8]]) -> [UInt8] {
            var writer = SSHWireWriter()
            writer.string(user)
            writer.string(name)
            writer.string([UInt8]())
            for key in keys {
                writer.string(key)
                writer.bool(false)
            }
            return writer.bytes
        }
        var all = SSHWireWriter()
        for hop in hops {
            var one = SSHWireWriter()
            one.string(end("", hop.fromHost, hop.fromKeys))
            one.string(end(hop.toUser, hop.toHost, hop.toKeys))
            one.string([UInt8]())
            all.string(one.bytes)
        }
        return all.bytes
    }
}

/// A key a client asks the agent to hold (`ssh-add`): Ed25519 and ECDSA P-256 keys are read.
public struct AgentKeyAddition: Sendable, Equatable, CustomStringConvertible {
    /// The public key.
    public let publicKey: SSHPublicKey
    /// The private key: for Ed25519 as OpenSSH sends it, the 32-byte seed followed by the
    /// 32-byte public key; for ECDSA P-256 the 32-byte scalar, big-endian.
    public let privateKey: SecretBytes
    /// The key's comment (often `user@host` or the file it came from).
    public let comment: String
    /// Its constraints, each at most once, in the order sent.
    public let constraints: [AgentConstraint]

    /// A key to add. Traps unless `privateKey` has its type's length (a programmer error).
    public init(publicKey: SSHPublicKey, privateKey: SecretBytes, comment: String, constraints: [AgentConstraint] = []) {
        switch publicKey {
        case .ed25519: precondition(privateKey.count == SSHPublicKey.ed25519PrivateKeyLength, "an Ed25519 private key is 64 bytes")
        case .ecdsaP256: precondition(privateKey.count == SSHPublicKey.p256ScalarLength, "a P-256 scalar is 32 bytes")
        }
        self.publicKey = publicKey
        self.privateKey = privateKey
        self.comment = comment
        self.constraints = constraints
    }

    /// The key type's name, `ssh-ed25519`.
    public var keyType: String { publicKey.typeName }

    /// The lifetime constraint's seconds, if any.
    public var lifetime: UInt32? {
        for case .lifetime(let seconds) in constraints { return seconds }
        return nil
    }

    /// Whether each use must be confirmed.
    public var requiresConfirmation: Bool { constraints.contains(.confirm) }

    /// The hops the key may be used over (`ssh-add -h`), if any were given.
    public var destinations: [AgentDestination]? {
        for case .destinations(let hops) in constraints { return hops }
        return nil
    }

    /// Reads the key type name, the key, the comment and (in a constrained add) the
    /// constraints, from just after the message type.
    init<Bytes>(reading reader: inout WireCursor<Bytes>, constrained: Bool) throws(SSHWireError) {
        let keyType = try reader.text()
        switch keyType {
        case SSHPublicKey.ed25519TypeName:
            (publicKey, privateKey) = try Self.readEd25519(&reader)
        case SSHPublicKey.ecdsaP256TypeName:
            // The curve, the point, the scalar (an mpint): whether the scalar is the point's
            // is checked by the service, which has the curve arithmetic.
            publicKey = .ecdsaP256(try SSHPublicKey.readP256Point(&reader))
            let range = try reader.mpintRange(maximumBytes: SSHPublicKey.p256ScalarLength)
            let scalar = SecretBytes.make(count: SSHPublicKey.p256ScalarLength) { buffer in
                buffer.initializeMemory(as: UInt8.self, repeating: 0)
                UnsafeMutableRawBufferPointer(rebasing: buffer[(SSHPublicKey.p256ScalarLength - range.count)...])
                    .copyBytes(from: reader.bytes[range])
            }
            privateKey = scalar
        default:
            // Every other type's fields differ and cannot be skipped without knowing them.
            throw .unsupportedKeyType(keyType)
        }
        comment = try reader.text()
        var constraints: [AgentConstraint] = []
        while constrained && !reader.isAtEnd {
            let type = try reader.byte()
            let constraint: AgentConstraint
            switch type {
            case AgentNumber.constrainLifetime:
                constraint = .lifetime(seconds: try reader.uint32())
            case AgentNumber.constrainConfirm:
                constraint = .confirm
            case AgentNumber.constrainExtension:
                // The contents' layout depends on the extension; only ssh-add -h's is read.
                let name = try reader.text()
                guard name == AgentDestination.extensionName else { throw .unsupportedConstraintExtension(name) }
                constraint = .destinations(try AgentDestination.readAll(&reader))
            default:
                throw .unknownConstraint(type: type)
            }
            guard !constraints.contains(where: { $0.number == type }) else { throw .repeatedConstraint(type: type) }
            constraints.append(constraint)
        }
        self.constraints = constraints
    }

    /// An Ed25519 key's public bytes and private key (seed and public half), after its type.
    static func readEd25519<Bytes>(_ reader: inout WireCursor<Bytes>) throws(SSHWireError) -> (SSHPublicKey, SecretBytes) {
        let publicBytes = try reader.string()
        guard publicBytes.count == SSHPublicKey.ed25519KeyLength else {
            throw .invalidKeyLength(expected: SSHPublicKey.ed25519KeyLength, actual: publicBytes.count)
        }
        let privateRange = try reader.stringRange()
        guard privateRange.count == SSHPublicKey.ed25519PrivateKeyLength else {
            throw .invalidKeyLength(expected: SSHPublicKey.ed25519PrivateKeyLength, actual: privateRange.count)
        }
        // The signer hashes the key's own public half into every signature; a public half
        // that is not the seed's lets a signer be tricked into revealing the seed, so a
        // mismatch is refused here (comparing public bytes only).
        let publicHalf = privateRange.upperBound - SSHPublicKey.ed25519KeyLength..<privateRange.upperBound
        guard reader.bytes[publicHalf].elementsEqual(publicBytes) else { throw .keyMismatch }
        return (.ed25519(publicBytes), SecretBytes(copying: reader.bytes[privateRange]))
    }

    /// Names the key type, comment and constraints; never the key.
    public var description: String {
        let limits = constraints.isEmpty ? "" : " (" + constraints.map(\.description).joined(separator: ", ") + ")"
        return "\(keyType) key \(SSHWireError.shown(comment))\(limits)"
    }

    /// Equal additions; the private keys are compared in constant time.
    public static func == (lhs: AgentKeyAddition, rhs: AgentKeyAddition) -> Bool {
        lhs.publicKey == rhs.publicKey && lhs.privateKey.constantTimeEquals(rhs.privateKey)
            && lhs.comment == rhs.comment && lhs.constraints == rhs.constraints
    }
}
