import CSodium
public import FoundationEssentials
public import TouchgateBasics

/// What binds a vault to a TPM (`vault_meta.tpm_binding`, JSON; covered by the state
/// digest): the secret the TPM keeps, the NV counter, and the vault key wrapped under the
/// recovery key.
///
/// ## Keys
/// `base = Argon2id(passphrase, salt)`; the TPM releases a random 32-byte secret `s` only
/// after `auth = BLAKE2b(key: base, "touchgate/tpm-auth/v1")` is given to the vault's
/// passphrase guard (a PIN Fail NV index, TPM2_PolicySecret on a salted session); the
/// vault key is wrapped under `BLAKE2b(key: base, "touchgate/tpm-kek/v1" ‖ s)`. So a copy
/// of the store is no use without this TPM, and every guess at the passphrase costs a TPM
/// authorization, which the guard counts: after ``guardLimit`` wrong ones in a row the TPM
/// refuses even the right one, and only the recovery key (32 random bytes shown once,
/// which wraps the vault key too, for a cleared or replaced TPM) opens the vault.
///
/// The guard is the vault's own, and the sealed object is `noDA`: one user's wrong
/// passphrases never reach the TPM's machine-wide dictionary-attack counter, which would
/// lock every other user's vault too. Format 1 (no guard) sealed under PolicyAuthValue and
/// counted on that machine-wide counter; such a binding still opens, and moves to a guard
/// at the next passphrase change.
///
/// ## Which TPM
/// `tpmName` is the name of the TPM's storage primary key when the vault was bound: it
/// derives from the TPM's owner seed, so another TPM (or a software one started to stand
/// in for this one) has another, and the store refuses it (``AuditLog``).
///
/// ## Counter
/// An orderly (hybrid) NV counter, whose reads and increments need a key derived from
/// `audit.key`, and the value the store expects (`vault.tpm-counter` in `vault_state`,
/// authenticated with the rest). See ``AuditLog`` for how they move together.
struct TPMBinding: Codable, Equatable {
    var format = 2
    /// The sealed secret (the shim's blob).
    var sealed: [UInt8]
    /// The NV index of the counter.
    var counter: UInt32
    /// The vault key wrapped under the recovery key.
    var recovery: [UInt8]
    /// The NV index of the passphrase guard (nil in format 1).
    var guardIndex: UInt32?
    /// The name of the TPM's storage primary key when bound (nil in format 1).
    var tpmName: [UInt8]?

    static let counterStateKey = "vault.tpm-counter"

    /// Wrong passphrases in a row after which the guard refuses even the right one. Ten,
    /// as a phone allows before it wipes: a person mistypes a few times; a thief holding
    /// the running machine gets ten guesses at an Argon2id-stretched passphrase, then
    /// needs the recovery key.
    static let guardLimit: UInt32 = 10

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
    /// The passphrase guard's index, its count of wrong passphrases in a row and its limit
    /// (nil for a format-1 binding, whose wrong passphrases count on the TPM's
    /// machine-wide dictionary-attack counter).
    public var guardIndex: UInt32?
    public var guardFailures: Int?
    public var guardLimit: Int?
    /// When the store last adopted the TPM's counter after an unclean TPM boot, and by how
    /// many changes (from the trail; nil when it never did).
    public var adoptedAt: Date?
    public var adoptedChanges: UInt64?
    /// The TPM's dictionary-attack state (nil when no TPM was reached).
    public var dictionaryAttack: TPMDictionaryAttackState?
    /// Why the TPM could not be reached, when it could not.
    public var problem: String?
}
