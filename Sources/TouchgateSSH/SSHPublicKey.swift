// Ed25519 public keys as SSH writes them (RFC 8709): the blob a key is known by, the line
// authorized_keys holds, the fingerprint ssh-keygen -l prints, and the signature blob an
// agent returns.
import FoundationEssentials
import TouchgateBasics

/// A public key this agent can hold: Ed25519, or ECDSA on NIST P-256.
public enum SSHPublicKey: Sendable, Hashable {
    /// An Ed25519 public key: 32 bytes (the encoded point).
    case ed25519([UInt8])
    /// An ECDSA P-256 public key: the 65-byte uncompressed point (0x04, X, Y) (RFC 5656).
    case ecdsaP256([UInt8])

    /// `ecdsa-sha2-nistp256`, the key type's and the signature algorithm's name.
    public static let ecdsaP256TypeName = "ecdsa-sha2-nistp256"
    /// The curve's name inside an ECDSA key blob.
    public static let p256CurveName = "nistp256"
    /// The length of an uncompressed P-256 point.
    public static let p256PointLength = 65
    /// The length of a P-256 private scalar.
    public static let p256ScalarLength = 32

    /// `ssh-ed25519`, the key type's and the signature algorithm's name.
    public static let ed25519TypeName = "ssh-ed25519"
    /// The length of an Ed25519 public key.
    public static let ed25519KeyLength = 32
    /// The length of an Ed25519 private key as OpenSSH sends it: seed, then public key.
    public static let ed25519PrivateKeyLength = 64
    /// The length of an Ed25519 signature.
    public static let ed25519SignatureLength = 64

    /// The key type's name.
    public var typeName: String {
        switch self {
        case .ed25519: Self.ed25519TypeName
        case .ecdsaP256: Self.ecdsaP256TypeName
        }
    }

    /// Reads a public key blob: string `ssh-ed25519`, string the 32-byte key, nothing after.
    ///
    /// Throws ``SSHWireError/unsupportedKeyType(_:)`` for another type,
    /// ``SSHWireError/invalidKeyLength(expected:actual:)`` for a key of another length.
    public init<Blob: RandomAccessCollection<UInt8>>(blob: Blob) throws(SSHWireError) where Blob.Index == Int {
        var reader = WireCursor(blob)
        let typeName = try reader.text()
        switch typeName {
        case Self.ed25519TypeName:
            let key = try reader.string()
            guard key.count == Self.ed25519KeyLength else {
                throw .invalidKeyLength(expected: Self.ed25519KeyLength, actual: key.count)
            }
            self = .ed25519(key)
        case Self.ecdsaP256TypeName:
            self = .ecdsaP256(try Self.readP256Point(&reader))
        default:
            throw .unsupportedKeyType(typeName)
        }
        try reader.expectEnd()
    }

    /// The curve name and the point of an ECDSA P-256 key, as its blob and an add carry them.
    static func readP256Point<Bytes>(_ reader: inout WireCursor<Bytes>) throws(SSHWireError) -> [UInt8] {
        let curve = try reader.text()
        guard curve == p256CurveName else { throw .unsupportedKeyType("\(ecdsaP256TypeName) on \(curve)") }
        let point = try reader.string()
        guard point.count == p256PointLength, point.first == 4 else {
            throw .invalidKeyLength(expected: p256PointLength, actual: point.count)
        }
        return point
    }

    /// The key's bytes, checked (a key of the wrong length is a programmer error).
    private var keyBytes: [UInt8] {
        switch self {
        case .ed25519(let key):
            precondition(key.count == Self.ed25519KeyLength, "an Ed25519 public key is 32 bytes, not \(key.count)")
            return key
        case .ecdsaP256(let point):
            precondition(point.count == Self.p256PointLength, "a P-256 point is 65 bytes, not \(point.count)")
            return point
        }
    }

    /// The public key blob: what the agent lists, sign requests name, and servers compare.
    public var blob: [UInt8] {
        var writer = SSHWireWriter()
        writer.string(typeName)
        if case .ecdsaP256 = self { writer.string(Self.p256CurveName) }
        writer.string(keyBytes)
        return writer.bytes
    }

    /// The line for an `authorized_keys` file: `ssh-ed25519 <base64 blob> <comment>`.
    ///
    /// Control characters in the comment are escaped (`\u{A}` for a newline), so the
    /// comment can never begin a second line with options of its own; an empty comment
    /// leaves the line with two fields.
    public func authorizedKeysLine(comment: String) -> String {
        Self.authorizedKeysLine(typeName: typeName, blob: blob, comment: comment)
    }

    /// The `authorized_keys` line of any key blob of type `typeName` (see the instance method).
    public static func authorizedKeysLine(typeName: String, blob: [UInt8], comment: String) -> String {
        let line = typeName + " " + Data(blob).base64EncodedString()
        return comment.isEmpty ? line : line + " " + StoredText.escaped(comment)
    }

    /// The fingerprint as `ssh-keygen -l` and ssh print it: `SHA256:` and the unpadded
    /// base64 of the blob's SHA-256.
    ///
    /// - Parameter sha256: SHA-256 of the bytes given (libsodium's `crypto_hash_sha256` in
    ///   the service). Taken as a closure because this module links no crypto library and
    ///   FoundationEssentials has no hash.
    public func fingerprint(sha256: ([UInt8]) -> [UInt8]) -> String {
        Self.fingerprint(ofBlob: blob, sha256: sha256)
    }

    /// The fingerprint of any key blob (see the instance method).
    public static func fingerprint(ofBlob blob: [UInt8], sha256: ([UInt8]) -> [UInt8]) -> String {
        "SHA256:" + String(Data(sha256(blob)).base64EncodedString().prefix { $0 != "=" })
    }

    /// The raw signature in an Ed25519 signature blob (string `ssh-ed25519`, string 64 bytes,
    /// nothing after), as a host's session proof carries it.
    ///
    /// Throws ``SSHWireError/unsupportedKeyType(_:)`` for another algorithm and
    /// ``SSHWireError/invalidKeyLength(expected:actual:)`` for a signature of another length.
    public static func ed25519Signature<Blob: RandomAccessCollection<UInt8>>(fromBlob blob: Blob) throws(SSHWireError) -> [UInt8]
    where Blob.Index == Int {
        let signature = try signatureBody(blob, of: ed25519TypeName)
        guard signature.count == ed25519SignatureLength else {
            throw .invalidKeyLength(expected: ed25519SignatureLength, actual: signature.count)
        }
        return signature
    }

    /// What a signature blob of `algorithm` carries (string the algorithm's name, string
    /// the signature, nothing after); throws for another algorithm.
    private static func signatureBody<Blob: RandomAccessCollection<UInt8>>(_ blob: Blob, of algorithm: String)
    throws(SSHWireError) -> [UInt8] where Blob.Index == Int {
        var reader = WireCursor(blob)
        let named = try reader.text()
        guard named == algorithm else { throw .unsupportedKeyType(named) }
        let body = try reader.string()
        try reader.expectEnd()
        return Array(body)
    }

    /// The signature blob for a raw signature by this key, as a sign response carries it:
    /// string `ssh-ed25519`, string the 64-byte signature. Traps unless `raw` is 64 bytes.
    public func signatureBlob(_ raw: [UInt8]) -> [UInt8] {
        precondition(raw.count == 64, "an Ed25519 or P-256 signature is 64 bytes, not \(raw.count)")
        var writer = SSHWireWriter()
        writer.string(typeName)
        switch self {
        case .ed25519:
            writer.string(raw)
        case .ecdsaP256:
            // RFC 5656: the two integers, each an mpint, inside one string.
            var inner = SSHWireWriter()
            inner.mpint(raw[..<32])
            inner.mpint(raw[32...])
            writer.string(inner.bytes)
        }
        return writer.bytes
    }

    /// The raw 64-byte `r || s` in an ECDSA P-256 signature blob (a host's session proof);
    /// throws for another algorithm or integers that do not fit the curve.
    public static func p256Signature<Blob: RandomAccessCollection<UInt8>>(fromBlob blob: Blob) throws(SSHWireError) -> [UInt8]
    where Blob.Index == Int {
        var integers = WireCursor(try signatureBody(blob, of: ecdsaP256TypeName))
        let r = try integers.unsignedInteger(maximumBytes: p256ScalarLength)
        let s = try integers.unsignedInteger(maximumBytes: p256ScalarLength)
        try integers.expectEnd()
        return r + s
    }
}
