import TouchgateBasics

/// The unwrapped vault key: what a passphrase unlock (or the kernel keyring) yields.
///
/// Opaque on purpose: only the vault wraps and unwraps keys with it. It lives in
/// guarded memory and is wiped when the last reference goes. Tied to one vault: using
/// it with another is a programmer error and traps.
public final class VaultKey: Sendable, CustomStringConvertible {
    /// The 32 key bytes.
    let bytes: SecretBytes
    /// The random id of the vault this key belongs to.
    let vaultID: [UInt8]

    init(bytes: SecretBytes, vaultID: [UInt8]) {
        precondition(bytes.count == SecretBox.keyBytes, "a vault key is 32 bytes")
        self.bytes = bytes
        self.vaultID = vaultID
    }

    /// Never the key: just what it is.
    public var description: String { "VaultKey(redacted)" }
}
