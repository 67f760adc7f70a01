import CSodium
import TouchgateBasics

// SecretBytes (TouchgateBasics) is the one type for secret memory; what needs libsodium
// is added here.
extension SecretBytes {
    /// `count` bytes from libsodium's CSPRNG.
    public static func random(count: Int) -> SecretBytes {
        make(count: count) { Sodium.randomBytes($0) }
    }

    /// Compares contents in time that depends only on the length (`sodium_memcmp`).
    public func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        guard count > 0 else { return true }
        return withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in sodium_memcmp(mine.baseAddress, theirs.baseAddress, count) == 0 }
        }
    }
}
