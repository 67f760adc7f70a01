import CNettle

/// SHA-256 (Nettle's), for what other programs name by it: an SSH key's fingerprint, an
/// ECDSA digest, an approval's digest.
public enum SHA256 {
    public static let digestBytes = Int(SHA256_DIGEST_SIZE)

    /// The digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var context = sha256_ctx()
        nettle_sha256_init(&context)
        nettle_sha256_update(&context, bytes.count, bytes)
        var digest = [UInt8](repeating: 0, count: digestBytes)
        nettle_sha256_digest(&context, digest.count, &digest)
        return digest
    }
}
