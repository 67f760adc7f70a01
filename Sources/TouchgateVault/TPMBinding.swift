import CSodium
import FoundationEssentials
public import TouchgateBasics

/// What binds a vault to a TPM (`vault_meta.tpm_binding`, JSON; covered by the state
/// digest): the secret the TPM keeps, the NV counter, and the vault key wrapped under the
/// recovery key.
///
/// ## Keys
/// `base = Argon2id(passphrase, salt)`; the TPM releases a random 32-byte secret `s` only
/// for `auth = BLAKE2b(key: base, "touchgate/tpm-auth/v1")`, through a PolicyAuthValue
/// policy on a salted session, and counts every wrong `auth` toward its dictionary-attack
/// lockout; the vault key is wrapped under `BLAKE2b(key: base, "touchgate/tpm-kek/v1" ‖ s)`.
/// So a copy of the store is no use without this TPM, and every guess at the passphrase
/// costs a TPM authorization, which the TPM rations. The recovery key (32 random bytes
/// shown once) wraps the vault key too, for a cleared or replaced TPM.
///
/// ## Counter
/// An orderly (hybrid) NV counter, whose reads and increments need a key derived from
/// `audit.key`, and the value the store expects (`vault.tpm-counter` in `vault_state`,
/// authenticated with the rest). See ``AuditLog`` for how they move together.
struct TPMBinding: Codable, Equatable {
    var format = 1
    /// The sealed secret (the shim's blob).
    var sealed: [UInt8]
    /// The NV index of the counter.
    var counter: UInt32
    /// The vault key wrapped under the recovery key.
    var recovery: [UInt8]

    static let counterStateKey = "vault.tpm-counter"

    func encoded() throws -> Data { try JSONEncoder().encode(self) }

    static func decode(_ data: Data?) -> TPMBinding? {
        data.flatMap { try? JSONDecoder().decode(TPMBinding.self, from: $0) }
    }

    /// BLAKE2b-256 keyed with `key` over `domain` and `extra`, in secret memory.
    static func derive(_ key: SecretBytes, _ domain: String, _ extra: SecretBytes? = nil) -> SecretBytes {
        Sodium.ensureInitialized()
        var message = Array(domain.utf8)
        extra?.withUnsafeBytes { message.append(contentsOf: $0) }
        defer { message.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        return SecretBytes.make(count: 32) { out in
            key.withUnsafeBytes { k in
                _ = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32, message,
                                       UInt64(message.count), k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
            }
        }
    }

    /// What the TPM must see before it releases `s`.
    static func auth(base: SecretBytes) -> SecretBytes { derive(base, "touchgate/tpm-auth/v1") }

    /// The key-encryption key from the passphrase's key and the TPM's secret.
    static func kek(base: SecretBytes, secret: SecretBytes) -> SecretBytes {
        derive(base, "touchgate/tpm-kek/v1", secret)
    }

    /// The key the recovery key stands for.
    static func recoveryKEK(_ recovery: SecretBytes) -> SecretBytes { derive(recovery, "touchgate/recovery/v1") }

    static func recoveryAssociatedData(vaultID: [UInt8]) -> [UInt8] {
        var ad = AssociatedData(domain: "touchgate/vault-key/recovery/v1")
        ad.append(vaultID)
        return ad.bytes
    }
}

/// The recovery key shown once when a vault is bound to a TPM: 32 random bytes as 64 hex
/// digits in groups of 8. Kept in secret memory; its ``description`` never shows it.
public struct RecoveryKey: Sendable, CustomStringConvertible {
    let bytes: SecretBytes

    /// The key as the person writes it down (`xxxxxxxx-xxxxxxxx-…`), in secret memory.
    public func text() -> SecretBytes {
        bytes.withUnsafeBytes { raw in
            let digits = Array("0123456789abcdef".utf8)
            return SecretBytes.make(count: 64 + 7) { out in
                var at = 0
                for (index, byte) in raw.enumerated() {
                    if index > 0, index % 4 == 0 { out[at] = UInt8(ascii: "-"); at += 1 }
                    out[at] = digits[Int(byte >> 4)]
                    out[at + 1] = digits[Int(byte & 0x0F)]
                    at += 2
                }
            }
        }
    }

    /// Parses what ``text()`` writes (hyphens, spaces and case ignored); `nil` otherwise.
    public init?(parsing text: SecretBytes) {
        var nibbles: [UInt8] = []
        defer { nibbles.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        let valid: Bool = text.withUnsafeBytes { raw in
            for character in raw {
                switch character {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(character - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(character - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(character - UInt8(ascii: "A") + 10)
                case UInt8(ascii: "-"), UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"): continue
                default: return false
                }
            }
            return true
        }
        guard valid, nibbles.count == 64 else { return nil }
        bytes = SecretBytes.make(count: 32) { out in
            for index in 0..<32 { out[index] = nibbles[2 * index] << 4 | nibbles[2 * index + 1] }
        }
    }

    init(random: Void) {
        bytes = SecretBytes.random(count: 32)
    }

    public var description: String { "RecoveryKey(hidden)" }
}

/// Whether and how a vault is bound to a TPM, as `touchgate tpm status` shows it.
public struct TPMStatus: Sendable, Equatable, Codable {
    /// The vault key needs the TPM.
    public var bound: Bool
    /// The counter's NV index, when bound.
    public var counterIndex: UInt32?
    /// The counter value the store expects, and the TPM's (nil when the TPM was not reached).
    public var storeCounter: UInt64?
    public var tpmCounter: UInt64?
    /// The TPM's dictionary-attack state (nil when no TPM was reached).
    public var dictionaryAttack: TPMDictionaryAttackState?
    /// Why the TPM could not be reached, when it could not.
    public var problem: String?
}
