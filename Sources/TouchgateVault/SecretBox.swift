import CSodium
import TouchgateBasics

/// XChaCha20-Poly1305 (IETF) with a random 24-byte nonce per seal: the one AEAD the vault uses.
///
/// Sealed form is `nonce ‖ ciphertext ‖ tag` unless the caller keeps the nonce apart.
/// Opening failures are reported as `nil`; callers turn that into the error that fits
/// (wrong passphrase for the vault key, integrity for everything else).
enum SecretBox {
    /// Key length (`crypto_aead_xchacha20poly1305_ietf_KEYBYTES`).
    static let keyBytes = Int(crypto_aead_xchacha20poly1305_ietf_keybytes())
    /// Nonce length (`..._NPUBBYTES`, 24).
    static let nonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
    /// Tag length (`..._ABYTES`, 16).
    static let tagBytes = Int(crypto_aead_xchacha20poly1305_ietf_abytes())

    /// Encrypts `message` under `key` with a fresh random nonce; returns both.
    static func seal(_ message: UnsafeRawBufferPointer, key: SecretBytes,
                     associatedData: [UInt8]) -> (nonce: [UInt8], ciphertext: [UInt8]) {
        precondition(key.count == keyBytes, "wrong key length")
        let nonce = Sodium.randomBytes(count: nonceBytes)
        var ciphertext = [UInt8](repeating: 0, count: message.count + tagBytes)
        var length: UInt64 = 0
        let status = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_encrypt(
                &ciphertext, &length,
                message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
                associatedData, UInt64(associatedData.count), nil, nonce,
                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        precondition(status == 0 && Int(length) == ciphertext.count, "XChaCha20-Poly1305 encryption failed")
        return (nonce, ciphertext)
    }

    /// Encrypts secret bytes; see ``seal(_:key:associatedData:)``.
    static func seal(_ message: SecretBytes, key: SecretBytes,
                     associatedData: [UInt8]) -> (nonce: [UInt8], ciphertext: [UInt8]) {
        message.withUnsafeBytes { seal($0, key: key, associatedData: associatedData) }
    }

    /// Decrypts into guarded memory, or `nil` when the key, nonce, ciphertext or
    /// associated data do not match (all indistinguishable, by design).
    static func open(nonce: [UInt8], ciphertext: [UInt8], key: SecretBytes,
                     associatedData: [UInt8]) -> SecretBytes? {
        precondition(key.count == keyBytes, "wrong key length")
        guard nonce.count == nonceBytes, ciphertext.count >= tagBytes else { return nil }
        struct Rejected: Error {}
        return try? SecretBytes.make(count: ciphertext.count - tagBytes) { out in
            var length: UInt64 = 0
            let status = key.withUnsafeBytes { k in
                crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), &length, nil,
                    ciphertext, UInt64(ciphertext.count),
                    associatedData, UInt64(associatedData.count), nonce,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            if status != 0 { throw Rejected() }
        }
    }

    /// Seals a 32-byte key into one blob `nonce ‖ ciphertext ‖ tag` (72 bytes).
    static func wrap(_ key: SecretBytes, under wrappingKey: SecretBytes, associatedData: [UInt8]) -> [UInt8] {
        let sealed = seal(key, key: wrappingKey, associatedData: associatedData)
        return sealed.nonce + sealed.ciphertext
    }

    /// Opens a blob made by ``wrap(_:under:associatedData:)``; `nil` on any mismatch.
    static func unwrap(_ blob: [UInt8], under wrappingKey: SecretBytes, associatedData: [UInt8]) -> SecretBytes? {
        guard blob.count == nonceBytes + keyBytes + tagBytes else { return nil }
        return open(nonce: Array(blob[..<nonceBytes]), ciphertext: Array(blob[nonceBytes...]),
                    key: wrappingKey, associatedData: associatedData)
    }
}
