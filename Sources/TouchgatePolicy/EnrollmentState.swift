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

    /// Parses the lowercase hexadecimal form written by ``hexString``.
    public init?(hex: String) {
        let scalars = Array(hex.unicodeScalars)
        guard scalars.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(scalars.count / 2)
        var index = 0
        while index < scalars.count {
            guard let high = Self.nibble(scalars[index]), let low = Self.nibble(scalars[index + 1])
            else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        digest = bytes
    }

    /// The digest in lowercase hexadecimal, for storage and display.
    public var hexString: String {
        let digits = Array("0123456789abcdef".unicodeScalars)
        var text = String.UnicodeScalarView()
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(text)
    }

    /// The hexadecimal digest.
    public var description: String { hexString }

    private static func nibble(_ scalar: Unicode.Scalar) -> UInt8? {
        switch scalar {
        case "0"..."9": UInt8(scalar.value - 48)
        case "a"..."f": UInt8(scalar.value - 87)
        case "A"..."F": UInt8(scalar.value - 55)
        default: nil
        }
    }
}
