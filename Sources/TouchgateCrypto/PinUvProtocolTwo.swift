import CNettle
public import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// CTAP 2.1's PIN/UV auth protocol 2 (§6.5.7), the authenticator's side: ECDH on P-256
/// with the platform's key, HKDF-SHA256 into an HMAC key and an AES-256 key, AES-256-CBC
/// without padding under a random IV, and HMAC-SHA256. Nettle's primitives, as for
/// ``P256``; the secrets stay in secret memory.
public struct PinUvProtocolTwo: Sendable {
    /// The authenticator's key agreement key, made anew with each authenticator start.
    private let scalar: SecretBytes
    /// Its public point (0x04 ‖ x ‖ y), sent by getKeyAgreement.
    public let publicPoint: [UInt8]

    public init() {
        scalar = P256.generate()
        publicPoint = P256.publicKey(scalar: scalar) ?? []
    }

    /// The shared secret with the platform whose key is (`x`, `y`): 32 bytes of HMAC key, then
    /// 32 bytes of AES key. Nil when the point is not on the curve.
    public func sharedSecret(x: [UInt8], y: [UInt8]) -> SecretBytes? {
        guard x.count == 32, y.count == 32 else { return nil }
        let curve = nettle_get_secp_256r1()
        var platform = ecc_point(), product = ecc_point()
        nettle_ecc_point_init(&platform, curve)
        nettle_ecc_point_init(&product, curve)
        defer {
            nettle_ecc_point_clear(&platform)
            nettle_ecc_point_clear(&product)
        }
        let px = GMPInteger(bytes: x[...]), py = GMPInteger(bytes: y[...])
        guard nettle_ecc_point_set(&platform, &px.value, &py.value) == 1 else { return nil }
        let secretX: SecretBytes? = scalar.withUnsafeBytes { raw in
            let value = GMPInteger(bytes: raw)
            var key = ecc_scalar()
            nettle_ecc_scalar_init(&key, curve)
            defer {
                if let limbs = key.p { explicit_bzero(limbs, Int(nettle_ecc_size(curve)) * MemoryLayout<mp_limb_t>.size) }
                nettle_ecc_scalar_clear(&key)
            }
            guard nettle_ecc_scalar_set(&key, &value.value) == 1 else { return nil }
            nettle_ecc_point_mul(&product, &key, &platform)
            let zx = GMPInteger(), zy = GMPInteger()
            nettle_ecc_point_get(&product, &zx.value, &zy.value)
            return zx.secretBytes(width: 32)
        }
        guard let secretX else { return nil }
        // §6.5.7: HKDF-SHA-256(salt = 32 zero bytes) with "CTAP2 HMAC key", then "CTAP2 AES key".
        return secretX.withUnsafeBytes { z in
            let hmacKey = HKDFSHA256.derive(secret: z, info: Array("CTAP2 HMAC key".utf8), count: 32)
            let aesKey = HKDFSHA256.derive(secret: z, info: Array("CTAP2 AES key".utf8), count: 32)
            return SecretBytes.make(count: 64) { out in
                hmacKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[0..<32]).copyMemory(from: $0) }
                aesKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[32..<64]).copyMemory(from: $0) }
            }
        }
    }

    /// `plain` (whole blocks) encrypted under the shared secret's AES key: IV ‖ ciphertext.
    public static func encrypt(_ plain: SecretBytes, sharedSecret: SecretBytes, iv: [UInt8]) -> [UInt8]? {
        guard sharedSecret.count == 64, iv.count == 16, plain.count % 16 == 0 else { return nil }
        var context = aes256_ctx()
        defer { explicit_bzero(&context, MemoryLayout<aes256_ctx>.size) }
        sharedSecret.withUnsafeBytes {
            nettle_aes256_set_encrypt_key(&context, $0.baseAddress!.advanced(by: 32).assumingMemoryBound(to: UInt8.self))
        }
        var chain = iv
        var out = [UInt8](repeating: 0, count: plain.count)
        plain.withUnsafeBytes { input in
            nettle_cbc_aes256_encrypt(&context, &chain, input.count, &out, input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        return iv + out
    }

    /// IV ‖ ciphertext decrypted under the shared secret's AES key, in secret memory.
    public static func decrypt(_ sealed: [UInt8], sharedSecret: SecretBytes) -> SecretBytes? {
        guard sharedSecret.count == 64, sealed.count > 16, sealed.count % 16 == 0 else { return nil }
        var context = aes256_ctx()
        defer { explicit_bzero(&context, MemoryLayout<aes256_ctx>.size) }
        sharedSecret.withUnsafeBytes {
            nettle_aes256_set_decrypt_key(&context, $0.baseAddress!.advanced(by: 32).assumingMemoryBound(to: UInt8.self))
        }
        let block: @convention(c) (UnsafeRawPointer?, Int, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?) -> Void = {
            context, length, out, input in
            nettle_aes256_decrypt(context?.assumingMemoryBound(to: aes256_ctx.self), length, out, input)
        }
        var chain = Array(sealed[0..<16])
        let body = Array(sealed[16...])
        return SecretBytes.make(count: body.count) { out in
            nettle_cbc_decrypt(&context, block, 16, &chain, body.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self), body)
        }
    }

    /// HMAC-SHA256 of `message` under `key` (for protocol 2, the shared secret's first 32
    /// bytes, or a pinUvAuthToken).
    public static func authenticate(key: UnsafeRawBufferPointer, _ message: [UInt8]) -> [UInt8] {
        var context = hmac_sha256_ctx()
        defer { explicit_bzero(&context, MemoryLayout<hmac_sha256_ctx>.size) }
        nettle_hmac_sha256_set_key(&context, key.count, key.baseAddress?.assumingMemoryBound(to: UInt8.self))
        nettle_hmac_sha256_update(&context, message.count, message)
        var digest = [UInt8](repeating: 0, count: 32)
        nettle_hmac_sha256_digest(&context, digest.count, &digest)
        return digest
    }

    /// Whether `mac` is `message`'s HMAC under `key`, compared in constant time.
    public static func verify(key: UnsafeRawBufferPointer, _ message: [UInt8], mac: [UInt8]) -> Bool {
        let expected = authenticate(key: key, message)
        guard mac.count == expected.count else { return false }
        return zip(mac, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
