import Crypto
import Foundation
import TouchgateAPI
import TouchgateVault

/// ECDSA on NIST P-256 for SSH keys (`ecdsa-sha2-nistp256`, RFC 5656), by swift-crypto
/// (BoringSSL): libsodium, which does everything else here, has no NIST curves. The vault
/// keeps the 32-byte scalar sealed; it is handed to BoringSSL for one operation at a time,
/// through a copy that is wiped at once (BoringSSL clears its own key when it frees it).
enum P256Key {
    /// A new private scalar, in secret memory.
    static func generate() -> SecretBytes {
        var raw = P256.Signing.PrivateKey().rawRepresentation
        defer { wipe(&raw) }
        return SecretBytes(copying: raw)
    }

    /// The 65-byte uncompressed public point of `scalar`.
    /// - Throws: ``ServiceError`` `usage` for a scalar that is not a P-256 private key.
    static func publicKey(scalar: SecretBytes) throws(ServiceError) -> [UInt8] {
        [UInt8](try privateKey(scalar).publicKey.x963Representation)
    }

    /// The raw `r || s` (64 bytes) of an ECDSA signature over SHA-256 of `message`.
    static func sign(_ message: [UInt8], scalar: SecretBytes) throws(ServiceError) -> [UInt8] {
        do {
            return [UInt8](try privateKey(scalar).signature(for: message).rawRepresentation)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.error, "ECDSA signing failed: \(error)")
        }
    }

    /// Whether `signature` (`r || s`) is `publicKey`'s over `message` (a host's session proof).
    static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard let key = try? P256.Signing.PublicKey(x963Representation: publicKey),
              let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.isValidSignature(parsed, for: message)
    }

    private static func privateKey(_ scalar: SecretBytes) throws(ServiceError) -> P256.Signing.PrivateKey {
        var raw = scalar.withUnsafeBytes { Data($0) }
        defer { wipe(&raw) }
        do {
            return try P256.Signing.PrivateKey(rawRepresentation: raw)
        } catch {
            throw ServiceError(.usage, "the ECDSA private key is not a P-256 key")
        }
    }

    private static func wipe(_ data: inout Data) {
        _ = data.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
    }
}
