import CSodium

/// SHA-256 (libsodium), for what other programs name by it: an SSH key's fingerprint.
public enum SHA256 {
    /// The digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256(&digest, bytes, UInt64(bytes.count))
        return digest
    }
}
