// The SSH wire reader for callers outside this module's decoders (an extension's contents,
// a key blob of a type the door knows about).

/// Reads SSH wire fields (RFC 4251 §5: `byte`, `boolean`, `uint32`, `string`) from the
/// front of some bytes.
///
/// Every read returns a whole field and moves past it, or throws; after an error the
/// position is unspecified, so stop reading. A length prefix larger than what is left throws
/// ``SSHWireError/lengthTooLarge(declared:remaining:)``; nothing is allocated for it.
public struct SSHWireReader: Sendable {
    var cursor: WireCursor<ArraySlice<UInt8>>

    /// A reader at the start of `bytes`.
    public init(_ bytes: [UInt8]) {
        cursor = WireCursor(bytes[...])
    }

    /// A reader at the start of `bytes` (indices of returned slices are those of `bytes`).
    public init(_ bytes: ArraySlice<UInt8>) {
        cursor = WireCursor(bytes)
    }

    /// How many bytes are left.
    public var remaining: Int { cursor.remaining }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { cursor.isAtEnd }

    /// One byte.
    public mutating func byte() throws(SSHWireError) -> UInt8 { try cursor.byte() }

    /// A big-endian 32-bit unsigned integer.
    public mutating func uint32() throws(SSHWireError) -> UInt32 { try cursor.uint32() }

    /// A boolean: 0 or 1; any other byte throws ``SSHWireError/invalidBoolean(_:)``.
    public mutating func bool() throws(SSHWireError) -> Bool { try cursor.bool() }

    /// A string's contents: the bytes after a `uint32` length, as a slice of the input.
    public mutating func string() throws(SSHWireError) -> ArraySlice<UInt8> {
        let range = try cursor.stringRange()
        return cursor.bytes[range]
    }

    /// A string that must be UTF-8 text without NUL (``SSHWireError/invalidText``).
    public mutating func text() throws(SSHWireError) -> String { try cursor.text() }

    /// Everything not yet read (an extension's contents, which have no length of their own).
    public mutating func rest() -> ArraySlice<UInt8> {
        let range = cursor.restRange()
        return cursor.bytes[range]
    }

    /// Throws ``SSHWireError/trailingBytes(count:)`` unless every byte has been read.
    public func expectEnd() throws(SSHWireError) { try cursor.expectEnd() }
}
