/// What the authenticator signs and answers (WebAuthn §6.1, CTAP 2.1 §6): authenticator
/// data, COSE public keys, and the CBOR maps of each command's answer.
public struct AuthenticatorData: Equatable, Sendable {
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let userPresent = Flags(rawValue: 0x01)
        public static let userVerified = Flags(rawValue: 0x04)
        public static let attestedCredentialData = Flags(rawValue: 0x40)
    }

    public var rpIdHash: [UInt8]
    public var flags: Flags
    public var signCount: UInt32
    /// For a new credential: the AAGUID, its id and its COSE public key.
    public var attested: (aaguid: [UInt8], credentialId: [UInt8], publicKey: [UInt8])?

    public init(rpIdHash: [UInt8], flags: Flags, signCount: UInt32,
                attested: (aaguid: [UInt8], credentialId: [UInt8], publicKey: [UInt8])? = nil) {
        self.rpIdHash = rpIdHash
        self.flags = flags
        self.signCount = signCount
        self.attested = attested
    }

    public static func == (lhs: AuthenticatorData, rhs: AuthenticatorData) -> Bool { lhs.bytes == rhs.bytes }

    public var bytes: [UInt8] {
        var out = rpIdHash
        out.append(flags.union(attested == nil ? [] : .attestedCredentialData).rawValue)
        out += (0..<4).reversed().map { UInt8((signCount >> ($0 * 8)) & 0xFF) }
        if let attested {
            out += attested.aaguid
            out += [UInt8(attested.credentialId.count >> 8), UInt8(attested.credentialId.count & 0xFF)]
            out += attested.credentialId + attested.publicKey
        }
        return out
    }
}

/// COSE_Key encodings (RFC 9053) of the public keys offered.
public enum COSEKey {
    /// ES256: an uncompressed P-256 point (0x04 ‖ x ‖ y).
    public static func es256(point: [UInt8]) -> [UInt8] {
        CBOR.map([(.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)),
                  (.int(-2), .bytes(Array(point[1...32]))), (.int(-3), .bytes(Array(point[33...64])))]).encoded
    }

    /// EdDSA: a raw Ed25519 public key.
    public static func edDSA(publicKey: [UInt8]) -> [UInt8] {
        CBOR.map([(.int(1), .int(1)), (.int(3), .int(-8)), (.int(-1), .int(6)), (.int(-2), .bytes(publicKey))]).encoded
    }

    /// The authenticator's key agreement key for PIN/UV auth protocol 2 (alg −25).
    public static func keyAgreement(point: [UInt8]) -> CBOR {
        .map([(.int(1), .int(2)), (.int(3), .int(-25)), (.int(-1), .int(1)),
              (.int(-2), .bytes(Array(point[1...32]))), (.int(-3), .bytes(Array(point[33...64])))])
    }
}

/// The CBOR answers, as maps keyed by CTAP's integers.
public enum CTAP2Answer {
    /// authenticatorGetInfo's answer.
    public static func info(aaguid: [UInt8], firmware: Int) -> CBOR {
        .map([
            (.int(0x01), .array([.text("FIDO_2_0"), .text("FIDO_2_1_PRE"), .text("FIDO_2_1")])),
            (.int(0x02), .array([])),
            (.int(0x03), .bytes(aaguid)),
            (.int(0x04), .map([
                (.text("rk"), .bool(true)), (.text("up"), .bool(true)), (.text("uv"), .bool(true)),
                (.text("plat"), .bool(false)), (.text("pinUvAuthToken"), .bool(true)),
                (.text("credMgmt"), .bool(true)), (.text("credentialMgmtPreview"), .bool(true)),
                (.text("makeCredUvNotRqd"), .bool(false)),
            ])),
            (.int(0x05), .int(CTAPHID.maximumPayload)),
            (.int(0x06), .array([.int(2)])),
            (.int(0x07), .int(CTAP2.maximumCredentialsInList)),
            (.int(0x08), .int(CTAP2.maximumCredentialIdLength)),
            (.int(0x09), .array([.text("usb")])),
            (.int(0x0A), .array(CTAP2.Algorithm.allCases.map {
                .map([(.text("alg"), .int($0.rawValue)), (.text("type"), .text("public-key"))])
            })),
            (.int(0x0E), .int(firmware)),
        ])
    }

    /// authenticatorMakeCredential's answer with self attestation (`packed`, the credential's
    /// own algorithm and signature, no certificate).
    public static func madeCredential(authenticatorData: [UInt8], algorithm: Int, signature: [UInt8]) -> CBOR {
        .map([(.int(1), .text("packed")), (.int(2), .bytes(authenticatorData)),
              (.int(3), .map([(.text("alg"), .int(algorithm)), (.text("sig"), .bytes(signature))]))])
    }

    /// One authenticatorGetAssertion (or GetNextAssertion) answer. `count` is given only in
    /// the first answer of several.
    public static func assertion(credentialId: [UInt8], authenticatorData: [UInt8], signature: [UInt8],
                                 user: CredentialUser?, count: Int?) -> CBOR {
        var pairs: [(CBOR, CBOR)] = [
            (.int(1), CredentialDescriptor(id: credentialId).cbor), (.int(2), .bytes(authenticatorData)),
            (.int(3), .bytes(signature)),
        ]
        if let user { pairs.append((.int(4), user.cbor)) }
        if let count { pairs.append((.int(5), .int(count))) }
        return .map(pairs)
    }

    /// authenticatorClientPIN's getKeyAgreement answer.
    public static func keyAgreement(point: [UInt8]) -> CBOR {
        .map([(.int(1), COSEKey.keyAgreement(point: point))])
    }

    /// The encrypted pinUvAuthToken.
    public static func token(_ encrypted: [UInt8]) -> CBOR {
        .map([(.int(2), .bytes(encrypted))])
    }

    /// getUVRetries' answer.
    public static func uvRetries(_ retries: Int) -> CBOR {
        .map([(.int(5), .int(retries))])
    }

    /// getPINRetries' answer: no PIN is set, so none are counted.
    public static func pinRetries(_ retries: Int) -> CBOR {
        .map([(.int(3), .int(retries))])
    }

    /// credential management's metadata: how many discoverable credentials exist, and room for more.
    public static func credentialsMetadata(existing: Int, remaining: Int) -> CBOR {
        .map([(.int(1), .int(existing)), (.int(2), .int(remaining))])
    }

    /// One relying party of an enumeration (`total` in the first only).
    public static func relyingParty(id: String, idHash: [UInt8], total: Int?) -> CBOR {
        var pairs: [(CBOR, CBOR)] = [(.int(3), .map([(.text("id"), .text(id))])), (.int(4), .bytes(idHash))]
        if let total { pairs.append((.int(5), .int(total))) }
        return .map(pairs)
    }

    /// One credential of an enumeration (`total` in the first only).
    public static func credential(user: CredentialUser, credentialId: [UInt8], publicKey: [UInt8], total: Int?) -> CBOR {
        var pairs: [(CBOR, CBOR)] = [
            (.int(6), user.cbor), (.int(7), CredentialDescriptor(id: credentialId).cbor),
            // credProtect 1 (userVerificationOptional): a platform's check without a touch (up
            // false) finds a credential here, as CTAP allows at that level; a sign-in never
            // goes without the finger, which is the service's rule, not this extension's.
            (.int(8), (try? CBOR.decode(publicKey)) ?? .null), (.int(10), .int(1)),
        ]
        if let total { pairs.append((.int(9), .int(total))) }
        return .map(pairs)
    }
}
