import CNettle
public import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// ECDSA over SHA-256 on NIST P-256 (`ecdsa-sha2-nistp256`, RFC 5656), by Nettle's hogweed:
/// libsodium, which does everything else here, has no NIST curves. The scalar stays in
/// secret memory; it is handed to Nettle for one operation at a time, and the copies GMP
/// and Nettle make of it are wiped before they are freed.
public enum P256 {
    public static let scalarBytes = 32
    public static let publicKeyBytes = 65
    public static let signatureBytes = 64

    /// A new private scalar (uniform in 1 … n−1, Nettle's key generation), in secret memory.
    public static func generate() -> SecretBytes {
        let curve = nettle_get_secp_256r1()
        var point = ecc_point(), key = ecc_scalar()
        nettle_ecc_point_init(&point, curve)
        nettle_ecc_scalar_init(&key, curve)
        defer {
            nettle_ecc_point_clear(&point)
            clear(&key, curve)
        }
        nettle_ecdsa_generate_keypair(&point, &key, nil, nettleRandom)
        let value = GMPInteger()
        nettle_ecc_scalar_get(&key, &value.value)
        // A scalar below the group order always fits in 32 bytes.
        return value.secretBytes(width: scalarBytes)!
    }

    /// The 65-byte uncompressed public point (0x04 ‖ X ‖ Y) of `scalar`; nil when `scalar`
    /// is not 32 bytes in 1 … n−1.
    public static func publicKey(scalar: SecretBytes) -> [UInt8]? {
        withScalar(scalar) { key, curve in
            var point = ecc_point()
            nettle_ecc_point_init(&point, curve)
            defer { nettle_ecc_point_clear(&point) }
            nettle_ecc_point_mul_g(&point, key)
            let x = GMPInteger(), y = GMPInteger()
            nettle_ecc_point_get(&point, &x.value, &y.value)
            guard let xBytes = x.bytes(width: 32), let yBytes = y.bytes(width: 32) else { return nil }
            return [0x04] + xBytes + yBytes
        }
    }

    /// The raw `r ‖ s` (64 bytes) of an ECDSA signature over SHA-256 of `message`; nil when
    /// `scalar` is not a P-256 private key.
    public static func sign(_ message: [UInt8], scalar: SecretBytes) -> [UInt8]? {
        let digest = SHA256.digest(message)
        return withScalar(scalar) { key, _ in
            var signature = dsa_signature()
            nettle_dsa_signature_init(&signature)
            defer { nettle_dsa_signature_clear(&signature) }
            nettle_ecdsa_sign(key, nil, nettleRandom, digest.count, digest, &signature)
            let r = GMPInteger(), s = GMPInteger()
            __gmpz_set(&r.value, &signature.r)
            __gmpz_set(&s.value, &signature.s)
            guard let rBytes = r.bytes(width: 32), let sBytes = s.bytes(width: 32) else { return nil }
            return rBytes + sBytes
        }
    }

    /// Whether `signature` (`r ‖ s`) is `publicKey`'s (65 bytes, uncompressed) over `message`.
    public static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes, publicKey[0] == 0x04 else { return false }
        let curve = nettle_get_secp_256r1()
        var point = ecc_point()
        nettle_ecc_point_init(&point, curve)
        defer { nettle_ecc_point_clear(&point) }
        let x = GMPInteger(bytes: publicKey[1...32]), y = GMPInteger(bytes: publicKey[33...64])
        // 0 for a point not on the curve.
        guard nettle_ecc_point_set(&point, &x.value, &y.value) == 1 else { return false }
        var parsed = dsa_signature()
        nettle_dsa_signature_init(&parsed)
        defer { nettle_dsa_signature_clear(&parsed) }
        let r = GMPInteger(bytes: signature[0..<32]), s = GMPInteger(bytes: signature[32..<64])
        __gmpz_set(&parsed.r, &r.value)
        __gmpz_set(&parsed.s, &s.value)
        let digest = SHA256.digest(message)
        // Nettle refuses r or s outside 1 … n−1.
        return nettle_ecdsa_verify(&point, digest.count, digest, &parsed) == 1
    }

    /// Runs `body` with `scalar` as Nettle's key; nil when it is not one.
    private static func withScalar<R>(_ scalar: SecretBytes,
                                      _ body: (UnsafePointer<ecc_scalar>, OpaquePointer?) -> R?) -> R? {
        guard scalar.count == scalarBytes else { return nil }
        let curve = nettle_get_secp_256r1()
        let value = scalar.withUnsafeBytes { GMPInteger(bytes: $0) }
        var key = ecc_scalar()
        nettle_ecc_scalar_init(&key, curve)
        defer { clear(&key, curve) }
        // 0 for a value outside 1 … n−1.
        guard nettle_ecc_scalar_set(&key, &value.value) == 1 else { return nil }
        return body(&key, curve)
    }

    /// Wipes and frees a scalar's limbs.
    private static func clear(_ key: inout ecc_scalar, _ curve: OpaquePointer?) {
        if let limbs = key.p { explicit_bzero(limbs, Int(nettle_ecc_size(curve)) * MemoryLayout<mp_limb_t>.size) }
        nettle_ecc_scalar_clear(&key)
    }
}
