import CSodium
import FoundationEssentials
import TouchgateBasics

/// The Ed25519 key that signs the head of the audit trail's public chain, so that anyone
/// holding only its public half can verify an exported trail (``AuditSeal``).
///
/// Its 32-byte seed is the file `audit-sign.key` beside `audit.key` (or, for touchgated,
/// one for the machine: ``StoreLocation/signingKeyDirectory``), written and read
/// with the same care (private regular file, created atomically, held in guarded memory).
/// The expanded secret key lives in guarded memory too. Unlike `audit.key`, the seed's
/// public half may be given away: a central verifier registers it.
final class AuditSigner: Sendable {
    /// The public half (32 bytes), to register centrally.
    let publicKey: [UInt8]
    private let secretKey: SecretBytes

    /// Signature length in bytes.
    static let signatureLength = Int(crypto_sign_BYTES)
    /// Public key length in bytes.
    static let publicKeyLength = Int(crypto_sign_PUBLICKEYBYTES)

    private init(seed: AuditKey) {
        var publicKey = [UInt8](repeating: 0, count: Self.publicKeyLength)
        secretKey = SecretBytes.make(count: Int(crypto_sign_SECRETKEYBYTES)) { secret in
            seed.withUnsafeBytes { seed in
                _ = crypto_sign_seed_keypair(&publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                             seed.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        self.publicKey = publicKey
    }

    /// The seed file for a data directory.
    static func path(in location: StoreLocation) -> String {
        (location.signingKeyDirectory ?? location.directory).appendingPathComponent(fileName).path
    }

    /// The seed file's name.
    static let fileName = "audit-sign.key"

    /// A store's own seed file left beside its database when the signing key lives
    /// elsewhere (a touchgated store from before the machine-wide key), if there is one.
    static func leftBehind(in location: StoreLocation) throws -> AuditSigner? {
        guard let elsewhere = location.signingKeyDirectory, elsewhere != location.directory else { return nil }
        let own = location.directory.appendingPathComponent(fileName).path
        return AuditKey.exists(at: own) ? AuditSigner(seed: try AuditKey.load(path: own)) : nil
    }

    /// Whether the seed file exists.
    static func exists(in location: StoreLocation) -> Bool {
        AuditKey.exists(at: path(in: location))
    }

    /// Loads the seed file, or creates it (another process racing us wins cleanly).
    static func loadOrCreate(in location: StoreLocation) throws -> AuditSigner {
        let path = path(in: location)
        return AuditSigner(seed: AuditKey.exists(at: path) ? try AuditKey.load(path: path) : try AuditKey.create(path: path))
    }

    /// The detached signature of `message`.
    func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Self.signatureLength)
        secretKey.withUnsafeBytes { secret in
            _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count),
                                     secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return signature
    }

    /// Whether `signature` is `publicKey`'s signature of `message`. Needs no secret.
    static func isValid(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureLength, publicKey.count == publicKeyLength, sodium_init() >= 0 else {
            return false
        }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}
