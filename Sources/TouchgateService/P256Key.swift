import TouchgateAPI
import TouchgateCrypto
import TouchgateVault

/// ECDSA on NIST P-256 for SSH keys (`ecdsa-sha2-nistp256`, RFC 5656): Nettle's, through
/// ``P256``, with the service's errors. The vault keeps the 32-byte scalar sealed.
enum P256Key {
    /// A new private scalar, in secret memory.
    static func generate() -> SecretBytes {
        P256.generate()
    }

    /// The 65-byte uncompressed public point of `scalar`.
    /// - Throws: ``ServiceError`` `usage` for a scalar that is not a P-256 private key.
    static func publicKey(scalar: SecretBytes) throws(ServiceError) -> [UInt8] {
        guard let point = P256.publicKey(scalar: scalar) else { throw notAKey }
        return point
    }

    /// The raw `r || s` (64 bytes) of an ECDSA signature over SHA-256 of `message`.
    static func sign(_ message: [UInt8], scalar: SecretBytes) throws(ServiceError) -> [UInt8] {
        guard let signature = P256.sign(message, scalar: scalar) else { throw notAKey }
        return signature
    }

    /// Whether `signature` (`r || s`) is `publicKey`'s over `message` (a host's session proof).
    static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        P256.verify(signature, of: message, publicKey: publicKey)
    }

    private static var notAKey: ServiceError { ServiceError(.usage, "the ECDSA private key is not a P-256 key") }
}
