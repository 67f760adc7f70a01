import FoundationEssentials
import Testing
// SecretBytes, which TouchgateAPI re-exports from TouchgateBasics.
import TouchgateAPI
import TouchgateSSH

/// Bytes built by hand, field by field, independently of `SSHWireWriter`.
private enum Wire {
    static func u32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
    static func string(_ bytes: [UInt8]) -> [UInt8] { u32(UInt32(bytes.count)) + bytes }
    static func string(_ text: String) -> [UInt8] { string(Array(text.utf8)) }
}

/// A real key (made with `ssh-keygen -t ed25519 -C alice@example`), its fingerprint as
/// `ssh-keygen -l` printed it, and the SHA-256 of its blob (computed with Python's hashlib).
private enum Alice {
    static let publicKey: [UInt8] = [
        0x2c, 0xb9, 0x4e, 0xd3, 0x07, 0xcc, 0xd1, 0x08, 0x7b, 0x10, 0x79, 0x66, 0x1a, 0xe7, 0x8d, 0x3b,
        0x51, 0x3b, 0xb5, 0x04, 0xcd, 0x79, 0xf9, 0x2d, 0xd1, 0x84, 0xe6, 0x18, 0x1c, 0xc5, 0xc0, 0x1c,
    ]
    static let blobSHA256: [UInt8] = [
        0x58, 0x61, 0xd6, 0xe7, 0xc1, 0xa9, 0xa5, 0x11, 0x41, 0xc2, 0x31, 0xfc, 0xa6, 0x9f, 0x7d, 0xbb,
        0x86, 0x17, 0x93, 0x3a, 0x7e, 0xd6, 0xc9, 0x53, 0x7c, 0x15, 0xbe, 0x09, 0x5f, 0x49, 0x5b, 0x28,
    ]
    static let authorizedKeysLine = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICy5TtMHzNEIexB5ZhrnjTtRO7UEzXn5LdGE5hgcxcAc alice@example"
    static let fingerprint = "SHA256:WGHW58GppRFBwjH8pp99u4YXkzp+1slTfBW+CV9JWyg"
    static let blob = Wire.string("ssh-ed25519") + Wire.string(publicKey)
    /// A seed no test key has, so that its bytes are easy to look for: 0xA5 is 165.
    static let seed = [UInt8](repeating: 0xA5, count: 32)
}

/// An add request's body as `ssh-add` sends it for an Ed25519 key.
private func addBody(type: UInt8 = 17, keyType: String = "ssh-ed25519", publicKey: [UInt8] = Alice.publicKey,
                     privateKey: [UInt8] = Alice.seed + Alice.publicKey, comment: String = "alice@example",
                     constraints: [UInt8] = []) -> [UInt8] {
    [type] + Wire.string(keyType) + Wire.string(publicKey) + Wire.string(privateKey) + Wire.string(comment) + constraints
}

@Suite struct SSHWireReaderTests {
    @Test("the reader reads each field type and the writer writes the same bytes")
    func fieldsRoundTrip() throws {
        let bytes: [UInt8] = [7] + Wire.u32(0xDEAD_BEEF) + [1, 0] + Wire.string([1, 2, 3]) + Wire.string("héllo") + [9, 9]
        var reader = SSHWireReader(bytes)
        #expect(try reader.byte() == 7)
        #expect(try reader.uint32() == 0xDEAD_BEEF)
        #expect(try reader.bool() == true)
        #expect(try reader.bool() == false)
        #expect(Array(try reader.string()) == [1, 2, 3])
        #expect(try reader.text() == "héllo")
        #expect(reader.remaining == 2)
        #expect(throws: SSHWireError.trailingBytes(count: 2)) { try reader.expectEnd() }
        #expect(Array(reader.rest()) == [9, 9])
        #expect(reader.isAtEnd)
        try reader.expectEnd()

        var writer = SSHWireWriter()
        writer.byte(7)
        writer.uint32(0xDEAD_BEEF)
        writer.bool(true)
        writer.bool(false)
        writer.string([1, 2, 3] as [UInt8])
        writer.string("héllo")
        writer.raw([9, 9])
        #expect(writer.bytes == bytes)
    }

    @Test("a slice is read at its own indices")
    func slices() throws {
        let bytes: [UInt8] = [0xFF, 0xFF] + Wire.string([4, 5]) + [0xFF]
        var reader = SSHWireReader(bytes[2..<8])
        let string = try reader.string()
        #expect(string == [4, 5] && string.startIndex == 6)
        try reader.expectEnd()
    }

    @Test("a length larger than what is left is an error, whatever its size")
    func lyingLengths() {
        for declared: UInt32 in [3, 4, 1 << 20, 0x7FFF_FFFF, 0xFFFF_FFFF] {
            var reader = SSHWireReader(Wire.u32(declared) + [1, 2])
            #expect(throws: SSHWireError.lengthTooLarge(declared: declared, remaining: 2)) { try reader.string() }
        }
        var exact = SSHWireReader(Wire.u32(2) + [1, 2])
        #expect((try? exact.string()).map(Array.init) == [1, 2])
    }

    @Test("short fixed fields, booleans other than 0 and 1, and text that is not UTF-8 or holds NUL are refused")
    func malformedFields() {
        var empty = SSHWireReader([])
        #expect(throws: SSHWireError.truncated) { try empty.byte() }
        var short = SSHWireReader([0, 0, 1])
        #expect(throws: SSHWireError.truncated) { try short.uint32() }
        var shortLength = SSHWireReader([0, 0])
        #expect(throws: SSHWireError.truncated) { try shortLength.string() }
        var two = SSHWireReader([2])
        #expect(throws: SSHWireError.invalidBoolean(2)) { try two.bool() }
        for bad: [UInt8] in [[0xC3], [0xFF, 0x41], [0x41, 0x00, 0x42], [0xED, 0xA0, 0x80]] {
            var reader = SSHWireReader(Wire.string(bad))
            #expect(throws: SSHWireError.invalidText) { try reader.text() }
        }
    }

    @Test("errors read as sentences and show a peer's names escaped and cut short")
    func errorDescriptions() {
        #expect(SSHWireError.truncated.description == "the SSH agent message ends in the middle of a field")
        let long = SSHWireError.unsupportedKeyType(String(repeating: "x", count: 10_000) + "\n")
        #expect(long.description.count < 200)
        // The cut counts escapes: 1,000 control characters would otherwise show as 8,000.
        #expect(SSHWireError.unsupportedKeyType(String(repeating: "\u{11}", count: 1000)).description.count < 200)
        let control = SSHWireError.unsupportedConstraintExtension("evil\nline@example.com")
        #expect(control.description == "key constraint extension \"evil\\u{000A}line@example.com\" is not supported")
        #expect(SSHWireError.unsupportedKeyType("ssh-rsa").description.contains("\"ssh-rsa\" is not supported"))
    }
}

@Suite struct AgentFrameTests {
    @Test("a frame is complete only with its whole body, and the next frame starts where it ends")
    func scanning() throws {
        let first = Wire.string([11])
        let second = Wire.string([19])
        let stream = first + second
        #expect(try AgentFrame.scan([UInt8]()) == .incomplete(needed: 4))
        #expect(try AgentFrame.scan(Array(stream.prefix(3))) == .incomplete(needed: 1))
        #expect(try AgentFrame.scan(Array(stream.prefix(4))) == .incomplete(needed: 1))
        #expect(try AgentFrame.scan(stream) == .complete(body: 4..<5))
        #expect(try AgentFrame.scan(stream[5...]) == .complete(body: 9..<10))
        #expect(try AgentFrame.scan(Wire.u32(0)) == .complete(body: 4..<4))
        #expect(AgentFrame.frame([11] as [UInt8]) == first)
    }

    @Test("a frame announced over 256 KiB is refused before its body arrives; 256 KiB itself is waited for")
    func oversized() throws {
        let limit = UInt32(AgentFrame.maximumLength)
        #expect(AgentFrame.maximumLength == 262_144)
        #expect(try AgentFrame.scan(Wire.u32(limit)) == .incomplete(needed: AgentFrame.maximumLength))
        #expect(throws: SSHWireError.frameTooLarge(declared: limit + 1)) { try AgentFrame.scan(Wire.u32(limit + 1)) }
        #expect(throws: SSHWireError.frameTooLarge(declared: 0xFFFF_FFFF)) { try AgentFrame.scan(Wire.u32(0xFFFF_FFFF) + [5]) }
    }

    @Test("a frame can be scanned in secret memory, without an array")
    func unsafeBytes() throws {
        let frame = Wire.string([23] + Wire.string("pass"))
        let secret = SecretBytes(copying: frame)
        let request = try secret.withUnsafeBytes { bytes throws(SSHWireError) -> AgentRequest in
            guard case .complete(let body) = try AgentFrame.scan(bytes) else { throw .truncated }
            return try AgentRequest(body: bytes[body])
        }
        #expect(request == .unlock(passphrase: SecretBytes(copying: Array("pass".utf8))))
    }
}

@Suite struct AgentRequestTests {
    @Test("every request type decodes from hand-built bytes and encodes back to them")
    func everyRequest() throws {
        let cases: [([UInt8], AgentRequest)] = [
            ([11], .requestIdentities),
            ([13] + Wire.string(Alice.blob) + Wire.string([1, 2, 3]) + Wire.u32(4),
             .sign(keyBlob: Alice.blob, data: [1, 2, 3], flags: .rsaSHA512)),
            (addBody(), .add(AgentKeyAddition(publicKey: .ed25519(Alice.publicKey),
                                              privateKey: SecretBytes(copying: Alice.seed + Alice.publicKey),
                                              comment: "alice@example"))),
            (addBody(type: 25, constraints: [1] + Wire.u32(60) + [2]),
             .add(AgentKeyAddition(publicKey: .ed25519(Alice.publicKey),
                                   privateKey: SecretBytes(copying: Alice.seed + Alice.publicKey),
                                   comment: "alice@example", constraints: [.lifetime(seconds: 60), .confirm]))),
            ([18] + Wire.string(Alice.blob), .remove(keyBlob: Alice.blob)),
            ([19], .removeAll),
            ([22] + Wire.string("hunter2"), .lock(passphrase: SecretBytes(copying: Array("hunter2".utf8)))),
            ([23] + Wire.string("hunter2"), .unlock(passphrase: SecretBytes(copying: Array("hunter2".utf8)))),
            ([27] + Wire.string("query") + [1, 2], .extension(name: "query", contents: [1, 2])),
        ]
        for (body, expected) in cases {
            let request = try AgentRequest(body: body)
            #expect(request == expected, "\(body)")
            #expect(request.body == body)
            #expect(request.frame == Wire.string(body))
        }
        let added = try AgentRequest(body: addBody(type: 25, constraints: [2] + [1] + Wire.u32(7)))
        guard case .add(let addition) = added else { Issue.record("not an add: \(added)"); return }
        #expect(addition.keyType == "ssh-ed25519" && addition.lifetime == 7 && addition.requiresConfirmation)
        #expect(addition.privateKey.withUnsafeBytes { Array($0) } == Alice.seed + Alice.publicKey)
    }

    @Test("a constrained add without constraints decodes as a plain add")
    func constrainedWithoutConstraints() throws {
        #expect(try AgentRequest(body: addBody(type: 25)) == AgentRequest(body: addBody(type: 17)))
    }

    @Test("an unknown type decodes as unknown, whatever follows; an empty body is an error")
    func unknownAndEmpty() throws {
        #expect(try AgentRequest(body: [9]) == .unknown(type: 9))
        #expect(try AgentRequest(body: [1, 0xFF, 0xFF]) == .unknown(type: 1))
        #expect(try AgentRequest(body: [5]) == .unknown(type: 5))
        #expect(throws: SSHWireError.emptyMessage) { try AgentRequest(body: [UInt8]()) }
    }

    /// Messages with no optional tail, so that none of their prefixes is a message.
    static let fixedMessages: [[UInt8]] = [
        [13] + Wire.string(Alice.blob) + Wire.string([1, 2, 3]) + Wire.u32(0),
        addBody(),
        addBody(type: 25, constraints: [1] + Wire.u32(60)),
        [18] + Wire.string(Alice.blob),
        [22] + Wire.string("hunter2"),
        [23] + Wire.string("hunter2"),
        [27] + Wire.string("session-bind@openssh.com"),
    ]

    @Test("a valid message cut at any byte is refused as cut short, never read as something else")
    func truncatedAtEveryOffset() throws {
        for message in Self.fixedMessages {
            let whole = try AgentRequest(body: message)
            for length in 0..<message.count {
                let prefix = Array(message.prefix(length))
                do {
                    let request = try AgentRequest(body: prefix)
                    // Only a constrained add cut between constraints is still an add, of fewer constraints.
                    #expect(message[0] == 25 && request != whole, "\(length) of \(message.count) bytes read as \(request)")
                } catch .emptyMessage {
                    #expect(length == 0)
                } catch .truncated {
                } catch .lengthTooLarge(let declared, let remaining) {
                    #expect(Int(declared) > remaining)
                } catch {
                    Issue.record("\(length) of \(message.count) bytes: \(error)")
                }
            }
        }
    }

    @Test("a byte after the last field is refused")
    func trailingBytes() {
        for message in Self.fixedMessages + [[11], [19]] where message[0] != 27 && message[0] != 25 {
            #expect(throws: SSHWireError.trailingBytes(count: 1)) { try AgentRequest(body: message + [0]) }
        }
        // A plain add has no constraints; a constrained one reads the byte as one.
        #expect(throws: SSHWireError.trailingBytes(count: 5)) { try AgentRequest(body: addBody(constraints: [1] + Wire.u32(60))) }
        #expect(throws: SSHWireError.unknownConstraint(type: 0)) { try AgentRequest(body: addBody(type: 25, constraints: [0])) }
    }

    @Test("an add of another key type names the type; a bad key, comment or constraint is refused")
    func badAdds() throws {
        #expect(throws: SSHWireError.unsupportedKeyType("ssh-rsa")) {
            try AgentRequest(body: [17] + Wire.string("ssh-rsa") + Wire.string([0x01, 0x00, 0x01]) + Wire.string([0xC5]))
        }
        #expect(throws: SSHWireError.unsupportedKeyType("sk-ssh-ed25519@openssh.com")) {
            try AgentRequest(body: addBody(keyType: "sk-ssh-ed25519@openssh.com"))
        }
        #expect(throws: SSHWireError.unsupportedKeyType("ssh-ed25519-cert-v01@openssh.com")) {
            try AgentRequest(body: addBody(keyType: "ssh-ed25519-cert-v01@openssh.com"))
        }
        #expect(throws: SSHWireError.invalidKeyLength(expected: 32, actual: 31)) {
            try AgentRequest(body: addBody(publicKey: Array(Alice.publicKey.dropLast())))
        }
        #expect(throws: SSHWireError.invalidKeyLength(expected: 64, actual: 32)) {
            try AgentRequest(body: addBody(privateKey: Alice.seed))
        }
        var otherPublic = Alice.publicKey
        otherPublic[0] ^= 1
        #expect(throws: SSHWireError.keyMismatch) { try AgentRequest(body: addBody(privateKey: Alice.seed + otherPublic)) }
        #expect(throws: SSHWireError.invalidText) { try AgentRequest(body: addBody(comment: "a\u{0}b")) }
        #expect(throws: SSHWireError.unknownConstraint(type: 3)) {
            try AgentRequest(body: addBody(type: 25, constraints: [3] + Wire.u32(10)))
        }
        #expect(throws: SSHWireError.unsupportedConstraintExtension("associated-certs-v00@openssh.com")) {
            try AgentRequest(body: addBody(type: 25, constraints: [255] + Wire.string("associated-certs-v00@openssh.com") + [1]))
        }
        // ssh-add -h: the hops are kept; one naming nothing, a user where a hop starts, or a
        // certificate authority (which is not checked here) is refused.
        let destination = "restrict-destination-v00@openssh.com"
        func end(_ user: String, _ host: String, _ keys: [[UInt8]], ca: Bool = false) -> [UInt8] {
            Wire.string(Array(user.utf8)) + Wire.string(Array(host.utf8)) + Wire.string([])
                + keys.flatMap { Wire.string($0) + [ca ? 1 : 0] }
        }
        func hops(_ list: [([UInt8], [UInt8])]) -> [UInt8] {
            [255] + Wire.string(Array(destination.utf8))
                + Wire.string(list.flatMap { Wire.string(Wire.string($0.0) + Wire.string($0.1) + Wire.string([])) })
        }
        let hostKey = Wire.string(Array("ssh-ed25519".utf8)) + Wire.string([UInt8](repeating: 7, count: 32))
        let otherKey = Wire.string(Array("ssh-ed25519".utf8)) + Wire.string([UInt8](repeating: 9, count: 32))
        let added = try AgentRequest(body: addBody(type: 25, constraints: hops([
            (end("", "", []), end("", "bastion", [hostKey])), (end("", "bastion", [hostKey]), end("deploy", "web*", [otherKey])),
        ])))
        guard case .add(let addition) = added else { Issue.record("not an add: \(added)"); return }
        #expect(addition.destinations == [
            AgentDestination(fromHost: "", fromKeys: [], toUser: "", toHost: "bastion", toKeys: [hostKey]),
            AgentDestination(fromHost: "bastion", fromKeys: [hostKey], toUser: "deploy", toHost: "web*", toKeys: [otherKey]),
        ])
        #expect(try AgentRequest(body: added.body) == added, "encoding loses nothing")
        #expect(addition.description.contains("destinations bastion, bastion>deploy@web*"), "\(addition)")
        #expect(throws: SSHWireError.invalidDestination("has no hop")) {
            try AgentRequest(body: addBody(type: 25, constraints: hops([])))
        }
        #expect(throws: SSHWireError.invalidDestination("has a hop to no known host")) {
            try AgentRequest(body: addBody(type: 25, constraints: hops([(end("", "", []), end("", "bastion", []))])))
        }
        #expect(throws: SSHWireError.invalidDestination("names a user on the host a hop starts from")) {
            try AgentRequest(body: addBody(type: 25, constraints: hops([(end("root", "a", [hostKey]), end("", "b", [otherKey]))])))
        }
        #expect(throws: (any Error).self) {
            try AgentRequest(body: addBody(type: 25, constraints: hops([(end("", "", []), end("", "b", [otherKey], ca: true))])))
        }
        #expect(throws: SSHWireError.repeatedConstraint(type: 1)) {
            try AgentRequest(body: addBody(type: 25, constraints: [1] + Wire.u32(60) + [2] + [1] + Wire.u32(5)))
        }
        #expect(throws: SSHWireError.repeatedConstraint(type: 2)) { try AgentRequest(body: addBody(type: 25, constraints: [2, 2])) }
    }

    @Test("the private key and a passphrase never show in a description, a reflection or a dump")
    func secretsNeverShown() throws {
        let add = try AgentRequest(body: addBody(type: 25, constraints: [2]))
        let lock = try AgentRequest(body: [22] + Wire.string(Alice.seed))
        for request in [add, lock] {
            var dumped = ""
            dump(request, to: &dumped)
            for shown in [String(describing: request), String(reflecting: request), "\(request)", dumped] {
                #expect(!shown.contains("165") && !shown.lowercased().contains("a5"), "\(shown)")
            }
        }
        #expect(String(describing: add) == "add ssh-ed25519 key \"alice@example\" (confirm)")
        #expect(String(describing: lock) == "lock")
    }
}

@Suite struct AgentResponseTests {
    @Test("each answer encodes to the bytes the protocol gives and decodes back")
    func answers() throws {
        let cases: [(AgentResponse, [UInt8])] = [
            (.failure, [5]),
            (.success, [6]),
            (.identities([]), [12] + Wire.u32(0)),
            (.identities([AgentIdentity(keyBlob: Alice.blob, comment: "alice@example"), AgentIdentity(keyBlob: [1], comment: "")]),
             [12] + Wire.u32(2) + Wire.string(Alice.blob) + Wire.string("alice@example") + Wire.string([1]) + Wire.string("")),
            (.signature([9, 8]), [14] + Wire.string([9, 8])),
            (.extensionFailure, [28]),
            (.extensionReply([0, 1]), [6, 0, 1]),
            (.query(["query", "b"]), [29] + Wire.string("query") + Wire.u32(2) + Wire.string("query") + Wire.string("b")),
        ]
        for (response, body) in cases {
            #expect(response.body == body)
            #expect(response.frame == Wire.string(body))
            #expect(try AgentResponse(body: body) == response)
        }
    }

    @Test("an unknown answer, a count of keys the bytes do not hold and trailing bytes are refused")
    func badAnswers() {
        #expect(throws: SSHWireError.unknownMessage(type: 11)) { try AgentResponse(body: [11]) }
        #expect(throws: SSHWireError.emptyMessage) { try AgentResponse(body: [UInt8]()) }
        #expect(throws: SSHWireError.truncated) { try AgentResponse(body: [12] + Wire.u32(0xFFFF_FFFF)) }
        #expect(throws: SSHWireError.trailingBytes(count: 1)) { try AgentResponse(body: [5, 0]) }
    }
}

@Suite struct SignedDataTests {
    static let sessionIdentifier = [UInt8](repeating: 0x11, count: 32)
    static let hostKey = Wire.string("ssh-ed25519") + Wire.string([UInt8](repeating: 0x22, count: 32))

    /// RFC 4252 §7's signed data, field by field.
    static func login(method: String = "publickey", signatureFollows: UInt8 = 1, extra: [UInt8] = []) -> [UInt8] {
        Wire.string(sessionIdentifier) + [50] + Wire.string("git") + Wire.string("ssh-connection") + Wire.string(method)
            + [signatureFollows] + Wire.string("ssh-ed25519") + Wire.string(Alice.blob) + extra
    }

    @Test("a public key login is recognised, with its host key when host-bound")
    func userAuthentication() {
        let plain = SignedData.classify(Self.login())
        let expected = UserAuthRequest(sessionIdentifier: Self.sessionIdentifier, user: "git", service: "ssh-connection",
                                       method: .publicKey, algorithm: "ssh-ed25519", publicKey: Alice.blob)
        #expect(plain == .userAuthentication(expected))
        #expect(expected.encoded == Self.login())
        #expect(expected.hostKey == nil)

        let bound = Self.login(method: "publickey-hostbound-v00@openssh.com", extra: Wire.string(Self.hostKey))
        guard case .userAuthentication(let request) = SignedData.classify(bound) else {
            Issue.record("a host-bound login was not recognised")
            return
        }
        #expect(request.hostKey == Self.hostKey && request.user == "git" && request.method.name == "publickey-hostbound-v00@openssh.com")
        #expect(request.encoded == bound)
    }

    @Test("anything not exactly a login is other data")
    func notLogins() {
        let unlike: [[UInt8]] = [
            Self.login(signatureFollows: 0),
            Self.login(signatureFollows: 2),
            Self.login(extra: [0]),
            Self.login(method: "password"),
            Self.login(method: "publickey-hostbound-v00@openssh.com"),
            Wire.string([]) + Array(Self.login().dropFirst(36)),
            Array(Self.login().dropLast()),
            [],
        ]
        for data in unlike {
            #expect(SignedData.classify(data) == .other(byteCount: data.count))
        }
        var otherMessage = Self.login()
        otherMessage[36] = 51
        #expect(SignedData.classify(otherMessage) == .other(byteCount: otherMessage.count))
    }

    /// PROTOCOL.sshsig's blob to sign, field by field, as `ssh-keygen -Y sign -n git` made it
    /// for "hello\n" (the hash is that text's SHA-512).
    static let helloHash: [UInt8] = [
        0xe7, 0xc2, 0x2b, 0x99, 0x4c, 0x59, 0xd9, 0xcf, 0x2b, 0x48, 0xe5, 0x49, 0xb1, 0xe2, 0x46, 0x66,
        0x63, 0x60, 0x45, 0x93, 0x0d, 0x3d, 0xa7, 0xc1, 0xac, 0xb2, 0x99, 0xd1, 0xc3, 0xb7, 0xf9, 0x31,
        0xf9, 0x4a, 0xae, 0x41, 0xed, 0xda, 0x2c, 0x2b, 0x20, 0x7a, 0x36, 0xe1, 0x0f, 0x8b, 0xcb, 0x8d,
        0x45, 0x22, 0x3e, 0x54, 0x87, 0x8f, 0x5b, 0x31, 0x6e, 0x7c, 0xe3, 0xb6, 0xbc, 0x01, 0x96, 0x29,
    ]
    static func sshsig(namespace: String = "git", reserved: [UInt8] = [], algorithm: String = "sha512",
                       hash: [UInt8] = helloHash) -> [UInt8] {
        Array("SSHSIG".utf8) + Wire.string(namespace) + Wire.string(reserved) + Wire.string(algorithm) + Wire.string(hash)
    }

    @Test("an ssh-keygen -Y sign request is recognised with its namespace and hash")
    func sshsig() {
        let expected = SSHSignatureRequest(namespace: "git", hashAlgorithm: .sha512, hash: Self.helloHash)
        #expect(SignedData.classify(Self.sshsig()) == .sshsig(expected))
        #expect(expected.encoded == Self.sshsig())
        let short = Self.sshsig(namespace: "file", algorithm: "sha256", hash: Array(Self.helloHash.prefix(32)))
        #expect(SignedData.classify(short) == .sshsig(SSHSignatureRequest(namespace: "file", hashAlgorithm: .sha256,
                                                                           hash: Array(Self.helloHash.prefix(32)))))
        let unlike: [[UInt8]] = [
            Self.sshsig(namespace: ""),
            Self.sshsig(reserved: [0]),
            Self.sshsig(algorithm: "md5"),
            Self.sshsig(algorithm: "sha256"),
            Self.sshsig() + [0],
            Array(Self.sshsig().dropLast()),
            Array("SSHSIH".utf8) + Self.sshsig().dropFirst(6),
            Array("SSHSIG".utf8),
        ]
        for data in unlike {
            #expect(SignedData.classify(data) == .other(byteCount: data.count))
        }
    }
}

@Suite struct SessionBindTests {
    @Test("session-bind contents decode field by field, round-trip, and refuse what is malformed")
    func sessionBind() throws {
        let contents = Wire.string(Alice.blob) + Wire.string([UInt8](repeating: 7, count: 32))
            + Wire.string(Wire.string("ssh-ed25519") + Wire.string([UInt8](repeating: 3, count: 64))) + [1]
        let bind = try SessionBind(contents: contents)
        #expect(bind.hostKey == Alice.blob && bind.sessionIdentifier == [UInt8](repeating: 7, count: 32) && bind.isForwarding)
        #expect(bind.contents == contents)
        #expect(SessionBind.extensionName == "session-bind@openssh.com")
        #expect(throws: SSHWireError.invalidBoolean(2)) { try SessionBind(contents: contents.dropLast() + [2]) }
        #expect(throws: SSHWireError.trailingBytes(count: 1)) { try SessionBind(contents: contents + [0]) }
        #expect(throws: SSHWireError.truncated) { try SessionBind(contents: contents.dropLast()) }
        for length in 0..<contents.count {
            #expect(throws: SSHWireError.self) { try SessionBind(contents: contents.prefix(length)) }
        }
    }
}

@Suite struct SSHPublicKeyTests {
    @Test("an Ed25519 key's blob, authorized_keys line and fingerprint are what ssh-keygen prints")
    func alice() throws {
        let key = SSHPublicKey.ed25519(Alice.publicKey)
        #expect(key.blob == Alice.blob)
        #expect(try SSHPublicKey(blob: Alice.blob) == key)
        #expect(key.authorizedKeysLine(comment: "alice@example") == Alice.authorizedKeysLine)
        #expect(key.authorizedKeysLine(comment: "") == String(Alice.authorizedKeysLine.dropLast(" alice@example".count)))
        #expect(!key.authorizedKeysLine(comment: "x\ncommand=\"sh\" ssh-ed25519 AAAA").contains("\n"))
        var hashed: [UInt8] = []
        let fingerprint = key.fingerprint(sha256: { hashed = $0; return Alice.blobSHA256 })
        #expect(fingerprint == Alice.fingerprint)
        #expect(hashed == Alice.blob)
        // Unpadded base64 on RFC 4648's vectors (an Ed25519 blob, 51 bytes, needs no padding).
        for (text, encoded) in [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy")] {
            let printed = key.fingerprint(sha256: { _ in Array(text.utf8) })
            #expect(printed == "SHA256:" + encoded)
        }
    }

    @Test("another key type or length, or bytes after the key, are refused")
    func badBlobs() {
        #expect(throws: SSHWireError.unsupportedKeyType("ssh-rsa")) { try SSHPublicKey(blob: Wire.string("ssh-rsa") + Wire.string([1])) }
        #expect(throws: SSHWireError.invalidKeyLength(expected: 32, actual: 33)) {
            try SSHPublicKey(blob: Wire.string("ssh-ed25519") + Wire.string(Alice.publicKey + [0]))
        }
        #expect(throws: SSHWireError.trailingBytes(count: 1)) { try SSHPublicKey(blob: Alice.blob + [0]) }
    }

    @Test("a signature blob names the algorithm and carries the 64 bytes")
    func signatureBlob() {
        let raw = [UInt8](repeating: 0x42, count: 64)
        #expect(SSHPublicKey.ed25519(Alice.publicKey).signatureBlob(raw) == Wire.string("ssh-ed25519") + Wire.string(raw))
    }
}

@Suite struct KnownHostsTests {
    @Test("a host key's names come from plain entries; hashed ones are counted, patterns and markers name nothing")
    func names() {
        let key = Alice.blob
        let line = "ssh-ed25519 " + Data(key).base64EncodedString()
        let other = "ssh-ed25519 " + Data([UInt8](repeating: 1, count: 51)).base64EncodedString()
        let text = """
            # a comment naming \(line)
            git.example.com,[10.0.0.7]:2222,!bad.example.com,*.example.org \(line) alice@example
            |1|c2FsdA==|aGFzaA== \(line)
            @revoked revoked.example.com \(line)
            @cert-authority *.example.com \(line)
            other.example.com \(other)
            git.example.com \(line)

            broken
            """
        let found = KnownHosts.names(for: key, in: text)
        #expect(found.names == ["git.example.com", "10.0.0.7:2222"])
        #expect(found.hashedEntries == 1)
        #expect(KnownHosts.names(for: [1, 2, 3], in: text).names.isEmpty)
        #expect(KnownHosts.names(for: key, in: "").names.isEmpty)
    }
}

@Suite struct ECDSAWireTests {
    static let point: [UInt8] = [4] + [UInt8](repeating: 0x11, count: 64)

    @Test("an ECDSA P-256 add decodes its curve, point and scalar, and writes back the same bytes")
    func add() throws {
        let scalar: [UInt8] = [0x80] + [UInt8](repeating: 2, count: 31)
        let body = [17] + Wire.string("ecdsa-sha2-nistp256") + Wire.string("nistp256") + Wire.string(Self.point)
            + Wire.string([0] + scalar) + Wire.string("nist")
        let request = try AgentRequest(body: body)
        guard case .add(let addition) = request else { Issue.record("\(request)"); return }
        #expect(addition.publicKey == .ecdsaP256(Self.point) && addition.comment == "nist")
        #expect(addition.privateKey.withUnsafeBytes { Array($0) } == scalar)
        #expect(request.body == body)
        // A short scalar is padded on the left to 32 bytes.
        let short = [17] + Wire.string("ecdsa-sha2-nistp256") + Wire.string("nistp256") + Wire.string(Self.point)
            + Wire.string([1, 2]) + Wire.string("")
        guard case .add(let padded) = try AgentRequest(body: short) else { return }
        #expect(padded.privateKey.withUnsafeBytes { Array($0) } == [UInt8](repeating: 0, count: 30) + [1, 2])
    }

    @Test("another curve, a compressed point, a negative, padded or oversized scalar are refused")
    func refusals() {
        let head = [17] + Wire.string("ecdsa-sha2-nistp256")
        let bad: [[UInt8]] = [
            head + Wire.string("nistp384") + Wire.string(Self.point) + Wire.string([1]) + Wire.string(""),
            head + Wire.string("nistp256") + Wire.string([2] + [UInt8](repeating: 1, count: 32)) + Wire.string([1]) + Wire.string(""),
            head + Wire.string("nistp256") + Wire.string(Self.point) + Wire.string([0x80]) + Wire.string(""),
            head + Wire.string("nistp256") + Wire.string(Self.point) + Wire.string([0, 1]) + Wire.string(""),
            head + Wire.string("nistp256") + Wire.string(Self.point) + Wire.string([UInt8](repeating: 1, count: 33)) + Wire.string(""),
        ]
        for body in bad {
            #expect(throws: SSHWireError.self) { try AgentRequest(body: body) }
        }
    }

    @Test("a P-256 key blob and signature blob are what RFC 5656 gives")
    func blobs() throws {
        let key = SSHPublicKey.ecdsaP256(Self.point)
        #expect(key.blob == Wire.string("ecdsa-sha2-nistp256") + Wire.string("nistp256") + Wire.string(Self.point))
        #expect(try SSHPublicKey(blob: key.blob) == key)
        let raw = [0x80] + [UInt8](repeating: 1, count: 31) + [0, 0] + [UInt8](repeating: 2, count: 30)
        let signature = key.signatureBlob(raw)
        let inner = Wire.string([0, 0x80] + [UInt8](repeating: 1, count: 31)) + Wire.string([UInt8](repeating: 2, count: 30))
        #expect(signature == Wire.string("ecdsa-sha2-nistp256") + Wire.string(inner))
        #expect(try SSHPublicKey.p256Signature(fromBlob: signature) == raw)
    }
}
