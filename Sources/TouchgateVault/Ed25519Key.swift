import CSodium
public import TouchgateBasics

/// Ed25519 keys for SSH, by libsodium: the private part is a 32-byte seed kept in secret
/// memory (and sealed in the vault as an ``ItemKind/sshKey`` item); it is expanded only
/// for the moment of a signature, in secret memory too.
public enum Ed25519Key {
    /// Bytes of a public key.
    public static let publicKeyBytes = 32
    /// Bytes of a seed, the stored private part.
    public static let seedBytes = 32
    /// Bytes of a signature.
    public static let signatureBytes = 64

    /// A new key: its seed, from libsodium's CSPRNG.
    public static func generateSeed() -> SecretBytes {
        Sodium.ensureInitialized()
        return SecretBytes.random(count: seedBytes)
    }

    /// The public key of `seed`.
    public static func publicKey(seed: SecretBytes) -> [UInt8] {
        keyPair(seed).publicKey
    }

    /// The signature of `message` by `seed`'s key.
    public static func sign(_ message: [UInt8], seed: SecretBytes) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: signatureBytes)
        keyPair(seed).secretKey.withUnsafeBytes { secretKey in
            _ = crypto_sign_ed25519_detached(&signature, nil, message, UInt64(message.count),
                                             secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return signature
    }

    /// Whether `signature` is `publicKey`'s over `message`.
    public static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        Sodium.ensureInitialized()
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        return crypto_sign_ed25519_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    /// `seed`'s public key and libsodium's 64-byte secret key, the latter in secret memory
    /// (wiped when the last reference goes).
    private static func keyPair(_ seed: SecretBytes) -> (publicKey: [UInt8], secretKey: SecretBytes) {
        Sodium.ensureInitialized()
        precondition(seed.count == seedBytes, "an Ed25519 seed is 32 bytes")
        var publicKey = [UInt8](repeating: 0, count: publicKeyBytes)
        let secretKey = SecretBytes.make(count: Int(crypto_sign_ed25519_SECRETKEYBYTES)) { secretKey in
            seed.withUnsafeBytes { seed in
                _ = crypto_sign_ed25519_seed_keypair(&publicKey, secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                     seed.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return (publicKey, secretKey)
    }
}
