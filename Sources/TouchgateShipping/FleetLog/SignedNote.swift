import CSodium
import FoundationEssentials
public import TouchgateBasics
import TouchgatePolicy

/// C2SP's signed notes (c2sp.org/signed-note) with Ed25519, as the fleet log uses them:
/// batch heads signed by the machine that shipped them, checkpoints signed by the log's
/// key (and, from schema 2, by the machine that appended), cosigned by witnesses
/// (c2sp.org/tlog-cosignature, `cosignature/v1`), and key registrations signed by the
/// administrator's enrollment key.
///
/// A note is a body (lines, each ending in a newline), an empty line, then one line per
/// signature: `— <key name> base64(4-byte key id || signature)`.
public enum SignedNote {
    /// Signature type of a plain Ed25519 note signature.
    public static let ed25519: UInt8 = 0x01
    /// Signature type of an Ed25519 `cosignature/v1` (timestamped).
    public static let cosignature: UInt8 = 0x04
    /// Ed25519's sizes, in bytes.
    public static let publicKeyLength = Int(crypto_sign_PUBLICKEYBYTES)
    public static let signatureLength = Int(crypto_sign_BYTES)
    /// What starts a signature line: an em dash and a space.
    static let dash = "\u{2014} "

    /// One signature line as read: the key name and the bytes after base64 decoding.
    public struct Signature: Sendable, Equatable {
        public var name: String
        public var keyID: [UInt8]
        public var payload: [UInt8]
    }

    /// `SHA-256(name || "\n" || type || publicKey)[:4]`.
    public static func keyID(name: String, type: UInt8, publicKey: [UInt8]) -> [UInt8] {
        Array(MerkleTree.sha256(Array(name.utf8) + [0x0a, type] + publicKey).prefix(4))
    }

    /// A key name for `text` (a machine's name): characters a key name may not hold
    /// (space, `+`, anything outside printable ASCII) are %-escaped, so it is one word.
    public static func keyName(_ text: String) -> String {
        var name = ""
        for byte in text.utf8 {
            if (0x21...0x7e).contains(byte), byte != UInt8(ascii: "+"), byte != UInt8(ascii: "%") {
                name.append(Character(Unicode.Scalar(byte)))
            } else {
                name += "%" + byte.zeroPadded(2, radix: 16).uppercased()
            }
        }
        return name
    }

    /// The signature line for `payload` by the key `name`/`keyID`.
    public static func line(name: String, keyID: [UInt8], payload: [UInt8]) -> String {
        dash + name + " " + Data(keyID + payload).base64EncodedString() + "\n"
    }

    /// Splits a note into its body (ending in a newline) and its signatures; nil when it
    /// is not a note (no blank line, a signature line that does not parse).
    public static func parse(_ note: String) -> (body: String, signatures: [Signature])? {
        guard let range = note.firstRange(of: "\n\n") else { return nil }
        let body = String(note[..<range.lowerBound]) + "\n"
        var signatures: [Signature] = []
        for line in note[range.upperBound...].split(separator: "\n", omittingEmptySubsequences: true) {
            guard line.hasPrefix(dash) else { return nil }
            let fields = line.dropFirst(dash.count).split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2, let bytes = Data(base64Encoded: String(fields[1])), bytes.count > 4 else {
                return nil
            }
            signatures.append(Signature(name: String(fields[0]), keyID: Array(bytes.prefix(4)),
                                        payload: Array(bytes.dropFirst(4))))
        }
        return (body, signatures)
    }

    /// Whether `signature` is the Ed25519 signature of `message` by `publicKey`.
    public static func isValid(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureLength, publicKey.count == publicKeyLength, sodium_init() >= 0 else {
            return false
        }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    /// The bytes a `cosignature/v1` signs: its header, the time, then the checkpoint body.
    public static func cosignedMessage(body: String, time: UInt64) -> [UInt8] {
        Array("cosignature/v1\ntime \(time)\n\(body)".utf8)
    }
}

/// A checkpoint of the fleet log (c2sp.org/tlog-checkpoint): the log's origin, its size
/// and its root hash, three lines.
public struct Checkpoint: Sendable, Equatable {
    /// Every fleet log's origin starts so (and no audit seal's message can: domain
    /// separation for the machine key that signs both).
    public static let originPrefix = "touchgate.fleet/"

    public var origin: String
    public var size: Int64
    public var root: [UInt8]

    public init(origin: String, size: Int64, root: [UInt8]) {
        self.origin = origin
        self.size = size
        self.root = root
    }

    /// The checkpoint a note body spells, in exactly the form ``body`` prints (the root's
    /// base64 canonical: Foundation also reads encodings with stray bits set); nil for
    /// anything else.
    public init?(body: String) {
        let lines = body.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 4, lines[3].isEmpty, lines[0].hasPrefix(Self.originPrefix),
              let size = Int64(lines[1]), MerkleTree.isValid(size: size), String(size) == lines[1],
              let root = Data(base64Encoded: String(lines[2])), root.count == MerkleTree.hashLength,
              root.base64EncodedString() == lines[2] else { return nil }  // one text per checkpoint (fuzz: fleet-formats)
        self.init(origin: String(lines[0]), size: size, root: Array(root))
    }

    /// The note body: origin, size and base64 root, each on its line.
    public var body: String { "\(origin)\n\(size)\n\(Data(root).base64EncodedString())\n" }
}

/// An Ed25519 key held for signing notes (a witness's, the enrollment key), read from
/// the file `touchgate-collector keygen` wrote: `PRIVATE+KEY+<name>+<key id>+<base64(type || seed)>`.
/// Its public half is a verifier key (a "vkey"): `<name>+<key id>+<base64(type || public key)>`.
public final class NoteSigner: Sendable {
    public let name: String
    public let type: UInt8
    public let publicKey: [UInt8]
    private let secretKey: SecretBytes

    private init(name: String, type: UInt8, seed: UnsafeRawBufferPointer) {
        var publicKey = [UInt8](repeating: 0, count: SignedNote.publicKeyLength)
        _ = sodium_init()
        secretKey = SecretBytes.make(count: Int(crypto_sign_SECRETKEYBYTES)) { secret in
            _ = crypto_sign_seed_keypair(&publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                         seed.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        self.name = name
        self.type = type
        self.publicKey = publicKey
    }

    /// A new random key; returns it and the text of its private key file.
    public static func generate(name: String, type: UInt8) -> (NoteSigner, SecretBytes) {
        _ = sodium_init()
        let seed = SecretBytes.make(count: Int(crypto_sign_SEEDBYTES)) { randombytes_buf($0.baseAddress!, $0.count) }
        let signer = seed.withUnsafeBytes { NoteSigner(name: name, type: type, seed: $0) }
        let prefix = "PRIVATE+KEY+\(name)+\(Hex.encode(signer.keyID))+"
        let encoded = seed.withUnsafeBytes { Data([type] + Array($0)).base64EncodedString() }
        return (signer, SecretBytes(copying: Array((prefix + encoded + "\n").utf8)))
    }

    /// The key in a private key file's text; nil when it is not one.
    public static func parse(_ text: String) -> NoteSigner? {
        // The base64 at the end may hold `+` itself: split off the first four fields only.
        let fields = text.trimmingWhitespace()
            .split(separator: "+", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, fields[0] == "PRIVATE", fields[1] == "KEY", !fields[2].isEmpty,
              let data = Data(base64Encoded: String(fields[4])), data.count == 1 + Int(crypto_sign_SEEDBYTES)
        else { return nil }
        var bytes = Array(data)
        defer { sodium_memzero(&bytes, bytes.count) }
        let signer = bytes.withUnsafeBytes {
            NoteSigner(name: String(fields[2]), type: bytes[0], seed: UnsafeRawBufferPointer(rebasing: $0.dropFirst()))
        }
        return Hex.encode(signer.keyID) == fields[3] ? signer : nil
    }

    /// The key id of signature lines it makes.
    public var keyID: [UInt8] { SignedNote.keyID(name: name, type: type, publicKey: publicKey) }

    /// Its verifier key text.
    public var verifierKey: String { NoteVerifier(name: name, type: type, publicKey: publicKey).text }

    /// The signature line for `message`.
    public func signatureLine(_ message: [UInt8], prefix: [UInt8] = []) -> String {
        SignedNote.line(name: name, keyID: keyID, payload: prefix + sign(message))
    }

    /// The detached Ed25519 signature of `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: SignedNote.signatureLength)
        secretKey.withUnsafeBytes { secret in
            _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count),
                                     secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return signature
    }

    /// Signs a note body: the body, a blank line, its signature line.
    public func signNote(_ body: String) -> String {
        body + "\n" + signatureLine(Array(body.utf8))
    }

    /// A `cosignature/v1` line over a checkpoint body, made at `time`.
    public func cosign(_ body: String, time: UInt64) -> String {
        var stamp = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { stamp[index] = UInt8(truncatingIfNeeded: time >> (56 - 8 * UInt64(index))) }
        return signatureLine(SignedNote.cosignedMessage(body: body, time: time), prefix: stamp)
    }
}

/// A public key that verifies note signatures: a vkey, `<name>+<key id>+<base64(type || key)>`.
public struct NoteVerifier: Sendable, Equatable {
    public var name: String
    public var type: UInt8
    public var publicKey: [UInt8]

    public init(name: String, type: UInt8, publicKey: [UInt8]) {
        self.name = name
        self.type = type
        self.publicKey = publicKey
    }

    /// The verifier a vkey spells; nil for anything else.
    public init?(text: String) {
        let fields = text.trimmingWhitespace()
            .split(separator: "+", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, !fields[0].isEmpty, let data = Data(base64Encoded: String(fields[2])),
              data.count == 1 + SignedNote.publicKeyLength else { return nil }
        self.init(name: String(fields[0]), type: data.first!, publicKey: Array(data.dropFirst()))
        guard Hex.encode(keyID) == fields[1] else { return nil }
    }

    public var keyID: [UInt8] { SignedNote.keyID(name: name, type: type, publicKey: publicKey) }

    /// The vkey text.
    public var text: String { "\(name)+\(Hex.encode(keyID))+\(Data([type] + publicKey).base64EncodedString())" }

    /// Whether one of `note`'s signatures is this key's over its body; the body if so.
    public func verifiedBody(_ note: String) -> String? {
        guard type == SignedNote.ed25519, let (body, signatures) = SignedNote.parse(note) else { return nil }
        for signature in signatures where signature.name == name && signature.keyID == keyID {
            if SignedNote.isValid(signature.payload, of: Array(body.utf8), publicKey: publicKey) { return body }
        }
        return nil
    }

    /// The time of this witness's valid `cosignature/v1` of `body` in `line`, or nil.
    public func cosignatureTime(_ signature: SignedNote.Signature, body: String) -> UInt64? {
        guard type == SignedNote.cosignature, signature.name == name, signature.keyID == keyID,
              signature.payload.count == 8 + SignedNote.signatureLength else { return nil }
        let time = signature.payload.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let valid = SignedNote.isValid(Array(signature.payload.dropFirst(8)),
                                       of: SignedNote.cosignedMessage(body: body, time: time), publicKey: publicKey)
        return valid ? time : nil
    }
}
