// The one reader of SSH wire fields (RFC 4251 §5) every decoder here goes through. It is
// generic over the bytes' storage so that a door can decode straight from the secret
// memory it received into (an `UnsafeRawBufferPointer` over a `SecretBuffer`): a private
// key or passphrase then goes from there into `SecretBytes` without passing through an
// Array. Arrays and slices use the same code.
import TouchgateBasics

/// A position in bytes holding SSH wire fields, moved on by each read.
struct WireCursor<Bytes: RandomAccessCollection<UInt8>> where Bytes.Index == Int {
    let bytes: Bytes
    /// The index of the next unread byte.
    private(set) var position: Int

    init(_ bytes: Bytes) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - position }
    var isAtEnd: Bool { position == bytes.endIndex }

    mutating func byte() throws(SSHWireError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func uint32() throws(SSHWireError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated }
        defer { position += 4 }
        return (0..<4).reduce(0) { value, offset in value << 8 | UInt32(bytes[position + offset]) }
    }

    mutating func bool() throws(SSHWireError) -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        case let other: throw .invalidBoolean(other)
        }
    }

    /// Where the next string's contents are, its length checked against what is left
    /// before anything is read or made.
    mutating func stringRange() throws(SSHWireError) -> Range<Int> {
        let declared = try uint32()
        guard Int(declared) <= remaining else { throw .lengthTooLarge(declared: declared, remaining: remaining) }
        let start = position
        position += Int(declared)
        return start..<position
    }

    /// Where the magnitude of a non-negative mpint (RFC 4251) is, in its one canonical form
    /// (no needless leading zero, not negative) and at most `maximumBytes` long; so what
    /// decodes writes back byte for byte.
    mutating func mpintRange(maximumBytes: Int) throws(SSHWireError) -> Range<Int> {
        var range = try stringRange()
        if let first = range.first.map({ bytes[$0] }) {
            guard first & 0x80 == 0 else { throw .invalidInteger }
            if first == 0 {
                guard range.count > 1, bytes[range.lowerBound + 1] & 0x80 != 0 else { throw .invalidInteger }
                range = range.dropFirst()
            }
        }
        guard range.count <= maximumBytes else { throw .invalidInteger }
        return range
    }

    /// A canonical non-negative mpint as exactly `maximumBytes` big-endian bytes.
    mutating func unsignedInteger(maximumBytes: Int) throws(SSHWireError) -> [UInt8] {
        let range = try mpintRange(maximumBytes: maximumBytes)
        return [UInt8](repeating: 0, count: maximumBytes - range.count) + bytes[range]
    }

    mutating func string() throws(SSHWireError) -> [UInt8] {
        let range = try stringRange()
        return Array(bytes[range])
    }

    /// A string that must be text: UTF-8, without NUL.
    mutating func text() throws(SSHWireError) -> String {
        let range = try stringRange()
        let contents = bytes[range]
        let text = String(decoding: contents, as: UTF8.self)
        // Decoding replaces each invalid sequence with U+FFFD, so the text holds exactly
        // the input's bytes only when the input was valid UTF-8.
        guard !contents.contains(0), text.utf8.elementsEqual(contents) else { throw .invalidText }
        return text
    }

    /// A string copied straight into secret memory.
    mutating func secret() throws(SSHWireError) -> SecretBytes {
        let range = try stringRange()
        return SecretBytes(copying: bytes[range])
    }

    /// Everything left, consumed.
    mutating func restRange() -> Range<Int> {
        defer { position = bytes.endIndex }
        return position..<bytes.endIndex
    }

    func expectEnd() throws(SSHWireError) {
        guard isAtEnd else { throw .trailingBytes(count: remaining) }
    }
}

extension WireCursor: Sendable where Bytes: Sendable {}
