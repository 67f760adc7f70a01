
extension AuditLog {
    /// The signature of `message` by the key that seals this trail (``AuditSigner``): what
    /// makes a receipt of an approval checkable by anyone who registered that key's public
    /// half, offline. The caller puts a prefix of its own before the message, so that a
    /// receipt's signature can never stand for a seal's.
    public func sign(receipt message: [UInt8]) -> [UInt8] {
        signer.sign(message)
    }

    /// Whether `signature` is the signature of `message` by the holder of `publicKey`
    /// (Ed25519, 32-byte key, 64-byte signature). Needs no store and no secret.
    public static func isValidReceipt(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        AuditSigner.isValid(signature: signature, of: message, publicKey: publicKey)
    }
}
