import TouchgateSSH
import TouchgateVault
import TouchgateAPI

/// An SSH key as the vault keeps it: the Ed25519 seed or the P-256 scalar, and for a
/// security key the application it was made for (stored after the seed in the item's value).
struct SecuredKey {
    enum Algorithm: Equatable {
        case ed25519, ecdsaP256

        /// The algorithm OpenSSH names `typeName`.
        init(typeName: String) throws(ServiceError) {
            switch typeName {
            case SSHPublicKey.ed25519TypeName: self = .ed25519
            case SSHPublicKey.ecdsaP256TypeName: self = .ecdsaP256
            default: throw ServiceError.usage("SSH keys in the vault are ssh-ed25519 or ecdsa-sha2-nistp256, not "
                                              + "\(StoredText.escaped(typeName))")
            }
        }
    }

    let algorithm: Algorithm
    let secret: SecretBytes
    let application: String?

    init(algorithm: Algorithm = .ed25519, secret: SecretBytes, application: String?) {
        self.algorithm = algorithm
        self.secret = secret
        self.application = application
    }

    /// Reads an item's value. A value of another shape than its kind's is damage.
    init(_ info: VaultItemInfo, _ value: SecretBytes) throws {
        let seedBytes = Ed25519Key.seedBytes
        if info.kind == .sshKey, value.count == seedBytes {
            self.init(secret: value, application: nil)
        } else if info.kind == .sshECDSAKey, value.count == SSHPublicKey.p256ScalarLength {
            self.init(algorithm: .ecdsaP256, secret: value, application: nil)
        } else if info.kind == .sshSecurityKey, value.count > seedBytes,
                  let application = value.withUnsafeBytes({ String(validating: $0[seedBytes...], as: UTF8.self) }) {
            self.init(secret: value.withUnsafeBytes { SecretBytes(copying: $0.prefix(seedBytes)) }, application: application)
        } else {
            throw VaultError.integrity(what: "the SSH key \"\(StoredText.escaped(info.name))\"")
        }
    }

    /// The value to seal for a security key: the seed, then the application.
    static func value(seed: SecretBytes, application: String) -> SecretBytes {
        SecretBytes.make(count: seed.count + application.utf8.count) { buffer in
            seed.withUnsafeBytes { buffer.copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: buffer[seed.count...]).copyBytes(from: application.utf8)
        }
    }

    /// The item kind it is sealed as.
    var kind: ItemKind {
        application != nil ? .sshSecurityKey : algorithm == .ecdsaP256 ? .sshECDSAKey : .sshKey
    }

    /// The SSH public key (for a security key, its plain Ed25519 half).
    var publicKey: SSHPublicKey {
        get throws(ServiceError) {
            switch algorithm {
            case .ed25519: .ed25519(Ed25519Key.publicKey(seed: secret))
            case .ecdsaP256: .ecdsaP256(try P256Key.publicKey(scalar: secret))
            }
        }
    }

    /// The raw Ed25519 public key (security keys are Ed25519 only).
    var rawEd25519PublicKey: [UInt8] { Ed25519Key.publicKey(seed: secret) }

    var typeName: String {
        if application != nil { return SecurityKeySignedMessage.keyTypeName }
        return algorithm == .ecdsaP256 ? SSHPublicKey.ecdsaP256TypeName : SSHPublicKey.ed25519TypeName
    }

    /// The public key blob servers know the key by.
    var blob: [UInt8] {
        get throws(ServiceError) {
            guard let application else { return try publicKey.blob }
            return SecurityKeySignedMessage.publicKeyBlob(rawEd25519PublicKey, application: application)
        }
    }

    /// The raw signature of `message` (64 bytes: Ed25519's, or ECDSA's `r || s` over SHA-256).
    func sign(_ message: [UInt8]) throws(ServiceError) -> [UInt8] {
        switch algorithm {
        case .ed25519: Ed25519Key.sign(message, seed: secret)
        case .ecdsaP256: try P256Key.sign(message, scalar: secret)
        }
    }
}
