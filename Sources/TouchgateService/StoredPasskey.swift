import FoundationEssentials
import TouchgateAPI
import TouchgateCrypto
import TouchgateFIDO
import TouchgatePolicy
import TouchgateVault

/// A passkey as the vault keeps it, sealed in one item's value: a version byte, the
/// algorithm, the 32-byte private key (P-256 scalar or Ed25519 seed), then the account it is
/// for as CBOR (site, user, whether it is discoverable). Everything is inside the sealed
/// value: which sites a person has passkeys for is not readable from the database.
struct StoredPasskey {
    static let version: UInt8 = 1
    /// A credential id: the version, then 16 random bytes that also name the item.
    static let credentialIdBytes = 17

    let algorithm: CTAP2.Algorithm
    let secret: SecretBytes
    let rpId: String
    let rpName: String?
    let userId: [UInt8]
    let userName: String?
    let displayName: String?
    let discoverable: Bool

    /// The item name of a credential id, or nil when the id is not one of ours.
    static func itemName(credentialId: [UInt8]) -> String? {
        guard credentialId.count == credentialIdBytes, credentialId[0] == version else { return nil }
        return "passkey-" + Hex.encode(Array(credentialId[1...]))
    }

    /// The credential id of an item name.
    static func credentialId(itemName: String) -> [UInt8]? {
        guard itemName.hasPrefix("passkey-"), let random = Hex.decode(String(itemName.dropFirst("passkey-".count))),
              random.count == credentialIdBytes - 1 else { return nil }
        return [version] + random
    }

    /// A new private key for `algorithm`.
    static func generate(_ algorithm: CTAP2.Algorithm) -> SecretBytes {
        switch algorithm {
        case .es256: P256.generate()
        case .edDSA: Ed25519Key.generateSeed()
        }
    }

    /// Reads an item's value; a value of another shape is damage.
    init(_ info: VaultItemInfo, _ value: SecretBytes) throws {
        let damaged = VaultError.integrity(what: "the passkey \"\(StoredText.escaped(info.name))\"")
        guard info.kind == .passkey, value.count > 34 else { throw damaged }
        let (head, account): ([UInt8], [UInt8]) = value.withUnsafeBytes { (Array($0[0..<2]), Array($0[34...])) }
        guard head[0] == Self.version, let algorithm = head[1] == 1 ? CTAP2.Algorithm.es256 : head[1] == 2 ? .edDSA : nil,
              let fields = try? CBOR.decode(account), let rpId = fields[1]?.textString, let userId = fields[3]?.byteString
        else { throw damaged }
        self.algorithm = algorithm
        secret = value.withUnsafeBytes { SecretBytes(copying: $0[2..<34]) }
        self.rpId = rpId
        rpName = fields[2]?.textString
        self.userId = userId
        userName = fields[4]?.textString
        displayName = fields[5]?.textString
        discoverable = fields[6]?.boolean ?? false
    }

    init(algorithm: CTAP2.Algorithm, secret: SecretBytes, rpId: String, rpName: String?, userId: [UInt8],
         userName: String?, displayName: String?, discoverable: Bool) {
        self.algorithm = algorithm
        self.secret = secret
        self.rpId = rpId
        self.rpName = rpName
        self.userId = userId
        self.userName = userName
        self.displayName = displayName
        self.discoverable = discoverable
    }

    /// The value to seal.
    var value: SecretBytes {
        var pairs: [(CBOR, CBOR)] = [(.int(1), .text(rpId)), (.int(3), .bytes(userId)), (.int(6), .bool(discoverable))]
        if let rpName { pairs.append((.int(2), .text(rpName))) }
        if let userName { pairs.append((.int(4), .text(userName))) }
        if let displayName { pairs.append((.int(5), .text(displayName))) }
        let account = CBOR.map(pairs).encoded
        let head: [UInt8] = [Self.version, algorithm == .es256 ? 1 : 2]
        return SecretBytes.make(count: 34 + account.count) { out in
            out.copyBytes(from: head)
            secret.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[2..<34]).copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: out[34...]).copyBytes(from: account)
        }
    }

    /// The COSE_Key of the public key.
    var publicKey: [UInt8] {
        get throws(ServiceError) {
            switch algorithm {
            case .es256: COSEKey.es256(point: try P256Key.publicKey(scalar: secret))
            case .edDSA: COSEKey.edDSA(publicKey: Ed25519Key.publicKey(seed: secret))
            }
        }
    }

    /// The signature WebAuthn asks for: ES256's is DER-encoded, EdDSA's raw.
    func sign(_ message: [UInt8]) throws(ServiceError) -> [UInt8] {
        switch algorithm {
        case .es256: Self.der(try P256Key.sign(message, scalar: secret))
        case .edDSA: Ed25519Key.sign(message, seed: secret)
        }
    }

    /// ECDSA's `r ‖ s` as the DER SEQUENCE of two INTEGERs WebAuthn verifiers take.
    static func der(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    var algorithmName: String { algorithm == .es256 ? "es256" : "eddsa" }

    /// The user as an assertion names it.
    var user: CredentialUser { CredentialUser(id: userId, name: userName, displayName: displayName) }

    func report(name: String, info: VaultItemInfo) throws(ServiceError) -> PasskeyReport {
        PasskeyReport(name: name, rpID: rpId, rpName: rpName, userID: Data(userId), userName: userName,
                      displayName: displayName, credentialID: Data(Self.credentialId(itemName: name) ?? []),
                      algorithm: algorithmName, publicKey: Data(try publicKey), discoverable: discoverable,
                      policy: info.policy, usable: !info.isInvalidated)
    }
}
