import CNettle
public import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// HKDF with HMAC-SHA256 (RFC 5869), Nettle's.
public enum HKDFSHA256 {
    /// `count` bytes (at most 255 × 32) derived from `secret` with `salt` (empty: 32 zero
    /// bytes, as the RFC says) and `info`, in secret memory.
    public static func derive(secret: UnsafeRawBufferPointer, salt: [UInt8] = [], info: [UInt8] = [], count: Int) -> SecretBytes {
        precondition(count > 0 && count <= 255 * Int(SHA256_DIGEST_SIZE))
        let digestSize = Int(SHA256_DIGEST_SIZE)
        var context = hmac_sha256_ctx()
        defer { explicit_bzero(&context, MemoryLayout<hmac_sha256_ctx>.size) }
        // Nettle's generic HKDF takes the MAC as function pointers over a context.
        let update: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafePointer<UInt8>?) -> Void = { context, length, data in
            nettle_hmac_sha256_update(context?.assumingMemoryBound(to: hmac_sha256_ctx.self), length, data)
        }
        let digest: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<UInt8>?) -> Void = { context, length, out in
            nettle_hmac_sha256_digest(context?.assumingMemoryBound(to: hmac_sha256_ctx.self), length, out)
        }
        let key = salt.isEmpty ? [UInt8](repeating: 0, count: digestSize) : salt
        var pseudorandom = [UInt8](repeating: 0, count: digestSize)
        defer { explicit_bzero(&pseudorandom, pseudorandom.count) }
        nettle_hmac_sha256_set_key(&context, key.count, key)
        nettle_hkdf_extract(&context, update, digest, digestSize, secret.count,
                            secret.baseAddress?.assumingMemoryBound(to: UInt8.self), &pseudorandom)
        nettle_hmac_sha256_set_key(&context, pseudorandom.count, pseudorandom)
        return SecretBytes.make(count: count) { out in
            nettle_hkdf_expand(&context, update, digest, digestSize, info.count, info, count,
                               out.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
    }
}

/// AES-128 in CBC mode with PKCS#7 padding, Nettle's.
public enum AES128CBC {
    public static let keyBytes = 16
    public static let blockBytes = 16

    /// `plain` encrypted under `key` (16 bytes) with `iv` (16 bytes).
    public static func encrypt(_ plain: UnsafeRawBufferPointer, key: SecretBytes, iv: [UInt8]) -> [UInt8] {
        precondition(key.count == keyBytes && iv.count == blockBytes)
        let padding = blockBytes - plain.count % blockBytes
        // One array, the value copied into it and wiped below (no intermediate copy).
        var padded = [UInt8](repeating: UInt8(padding), count: plain.count + padding)
        padded.withUnsafeMutableBytes { $0.copyMemory(from: plain) }
        defer { explicit_bzero(&padded, padded.count) }
        var context = aes128_ctx()
        defer { explicit_bzero(&context, MemoryLayout<aes128_ctx>.size) }
        key.withUnsafeBytes { nettle_aes128_set_encrypt_key(&context, $0.baseAddress?.assumingMemoryBound(to: UInt8.self)) }
        var chain = iv
        var out = [UInt8](repeating: 0, count: padded.count)
        nettle_cbc_aes128_encrypt(&context, &chain, padded.count, &out, padded)
        return out
    }

    /// `sealed` decrypted under `key` with `iv`, in secret memory; nil when it is not a whole
    /// number of blocks or its padding is not PKCS#7's.
    public static func decrypt(_ sealed: [UInt8], key: SecretBytes, iv: [UInt8]) -> SecretBytes? {
        guard key.count == keyBytes, iv.count == blockBytes, !sealed.isEmpty, sealed.count % blockBytes == 0 else { return nil }
        var context = aes128_ctx()
        defer { explicit_bzero(&context, MemoryLayout<aes128_ctx>.size) }
        key.withUnsafeBytes { nettle_aes128_set_decrypt_key(&context, $0.baseAddress?.assumingMemoryBound(to: UInt8.self)) }
        let block: @convention(c) (UnsafeRawPointer?, Int, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?) -> Void = {
            context, length, out, input in
            nettle_aes128_decrypt(context?.assumingMemoryBound(to: aes128_ctx.self), length, out, input)
        }
        var chain = iv
        var plain = [UInt8](repeating: 0, count: sealed.count)
        defer { explicit_bzero(&plain, plain.count) }
        nettle_cbc_decrypt(&context, block, blockBytes, &chain, sealed.count, &plain, sealed)
        let padding = Int(plain[plain.count - 1])
        guard padding >= 1, padding <= blockBytes,
              plain[(plain.count - padding)...].allSatisfy({ Int($0) == padding }) else { return nil }
        return SecretBytes(copying: plain[..<(plain.count - padding)])
    }
}
