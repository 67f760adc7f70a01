/// An opaque digest of the set of enrolled prints.
///
/// The caller computes it with a hash function it supplies (the vault uses BLAKE2b from
/// libsodium) — see ``init(generation:printIDs:hash:)`` — and stores it beside every item
/// whose policy references ``AccessPolicy/biometryCurrentSet``. The policy core only
/// compares digests: an item bound to state S is invalid once the current state is not S.
/// The digest says nothing about the prints themselves.
public struct EnrollmentState: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The digest bytes.
    public let digest: [UInt8]

    /// Wraps a digest computed by the caller.
    public init(digest: [UInt8]) {
        self.digest = digest
    }

    /// Computes the state of an enrolled set with the caller's hash function.
    ///
    /// The hashed message is canonical: the generation (8 bytes, big endian), then each
    /// print identifier sorted, as a 4-byte big-endian length and its UTF-8 bytes. The
    /// `generation` is a counter the caller increments on every enroll and delete, so
    /// deleting a finger and enrolling one with a reused identifier still changes the state.
    /// - Parameter hash: a cryptographic hash (e.g. BLAKE2b-256 or SHA-256) over bytes.
    public init(generation: UInt64, printIDs: [EnrolledPrintID], hash: ([UInt8]) -> [UInt8]) {
        var message: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) {
            message.append(UInt8(truncatingIfNeeded: generation >> UInt64(shift)))
        }
        for id in printIDs.map(\.rawValue).sorted() {
            let bytes = Array(id.utf8)
            let length = UInt32(truncatingIfNeeded: bytes.count)
            for shift in stride(from: 24, through: 0, by: -8) {
                message.append(UInt8(truncatingIfNeeded: length >> UInt32(shift)))
            }
            message.append(contentsOf: bytes)
        }
        digest = hash(message)
    }

    /// Parses the hexadecimal form written by ``hexString`` (``Hex/decode(_:)``: digits
    /// of either case); `nil` for anything else.
    public init?(hex: String) {
        guard let digest = Hex.decode(hex) else { return nil }
        self.digest = digest
    }

    /// The digest in lowercase hexadecimal (``Hex/encode(_:)``), for storage and display.
    public var hexString: String { Hex.encode(digest) }

    /// The hexadecimal digest.
    public var description: String { hexString }
}
