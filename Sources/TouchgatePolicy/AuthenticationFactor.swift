/// A way the user proved presence.
public enum AuthenticationFactor: String, Hashable, Sendable, Codable, CaseIterable {
    /// A fingerprint match.
    case biometry
    /// The vault passphrase.
    case passphrase
}
