import CSodium
public import TouchgateBasics

// SecretBytes (TouchgateBasics) is the one type for secret memory; what needs libsodium
// (random bytes) is added here.
extension SecretBytes {
    /// `count` bytes from libsodium's CSPRNG.
    public static func random(count: Int) -> SecretBytes {
        make(count: count) { Sodium.randomBytes($0) }
    }
}
