import CSodium
import TouchgateBasics

/// Argon2id cost parameters for turning the passphrase into the key-encryption key.
///
/// They are stored beside the wrapped vault key, so a vault made with one set keeps
/// opening after the defaults are raised; ``Vault/changePassphrase(from:to:kdf:)`` can
/// move an existing vault to new ones. Tests use ``minimum``; everything else ``moderate``.
public struct KDFParameters: Sendable, Hashable, CustomStringConvertible {
    /// libsodium's algorithm id (`crypto_pwhash_ALG_ARGON2ID13` for Argon2id v1.3).
    public var algorithm: Int32
    /// Number of passes over memory (`opslimit`).
    public var opsLimit: UInt64
    /// Memory used, in bytes (`memlimit`).
    public var memLimit: UInt64

    /// Parameters for Argon2id v1.3 with the given costs.
    public init(opsLimit: UInt64, memLimit: UInt64) {
        self.init(algorithm: crypto_pwhash_alg_argon2id13(), opsLimit: opsLimit, memLimit: memLimit)
    }

    init(algorithm: Int32, opsLimit: UInt64, memLimit: UInt64) {
        self.algorithm = algorithm
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// libsodium's MODERATE limits (`crypto_pwhash_OPSLIMIT_MODERATE` = 3,
    /// `crypto_pwhash_MEMLIMIT_MODERATE` = 256 MiB): about a second on a desktop.
    public static let moderate = KDFParameters(
        opsLimit: UInt64(crypto_pwhash_opslimit_moderate()),
        memLimit: UInt64(crypto_pwhash_memlimit_moderate()))

    /// The smallest costs libsodium accepts (`crypto_pwhash_OPSLIMIT_MIN`,
    /// `crypto_pwhash_MEMLIMIT_MIN`). For tests only: it offers no real protection.
    public static let minimum = KDFParameters(
        opsLimit: UInt64(crypto_pwhash_opslimit_min()),
        memLimit: UInt64(crypto_pwhash_memlimit_min()))

    /// What a new vault gets unless told otherwise: ``moderate``.
    public static let `default` = moderate

    /// Whether libsodium accepts these values (Argon2id, limits within its bounds, and
    /// at most 4 GiB of memory so a tampered row cannot exhaust the machine).
    var isAcceptable: Bool {
        algorithm == crypto_pwhash_alg_argon2id13()
            && opsLimit >= UInt64(crypto_pwhash_opslimit_min())
            && opsLimit <= UInt64(crypto_pwhash_opslimit_max())
            && memLimit >= UInt64(crypto_pwhash_memlimit_min())
            && memLimit <= 4 << 30
    }

    /// Algorithm and costs, e.g. `argon2id13(ops: 3, mem: 256 MiB)`.
    public var description: String {
        let name = algorithm == crypto_pwhash_alg_argon2id13() ? "argon2id13" : "alg\(algorithm)"
        return "\(name)(ops: \(opsLimit), mem: \(memLimit >= 1 << 20 ? "\(memLimit >> 20) MiB" : "\(memLimit >> 10) KiB"))"
    }

    /// Derives a 32-byte key from `passphrase` and `salt` (Argon2id). Slow on purpose.
    /// - Throws: ``VaultError/keyDerivationFailed(_:)`` when libsodium cannot (usually memory).
    func deriveKey(passphrase: SecretBytes, salt: [UInt8]) throws -> SecretBytes {
        precondition(salt.count == Int(crypto_pwhash_saltbytes()), "salt must be crypto_pwhash_SALTBYTES long")
        guard isAcceptable else { throw VaultError.keyDerivationFailed(parameters: description) }
        let (ops, mem) = (opsLimit, memLimit)
        return try SecretBytes.make(count: SecretBox.keyBytes) { out in
            let status = passphrase.withUnsafeBytes { pass in
                pass.withMemoryRebound(to: CChar.self) { chars in
                    crypto_pwhash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(out.count),
                                  chars.baseAddress!, UInt64(chars.count), salt,
                                  ops, Int(mem), algorithm)
                }
            }
            if status != 0 { throw VaultError.keyDerivationFailed(parameters: description) }
        }
    }
}
