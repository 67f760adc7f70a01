// The writer every encoder here uses; public so that a door can write a reply of an
// extension this module does not know.

/// Writes SSH wire fields (RFC 4251 §5) one after another into an array.
///
/// Not for secrets: the bytes end in an ordinary array, which nothing wipes.
public struct SSHWireWriter: Sendable, Equatable {
    /// What has been written so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty writer.
    public init() {}

    /// Appends one byte.
    public mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    /// Appends a big-endian 32-bit unsigned integer.
    public mutating func uint32(_ value: UInt32) {
        bytes.append(contentsOf: [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
    }

    /// Appends a boolean as 1 or 0.
    public mutating func bool(_ value: Bool) {
        bytes.append(value ? 1 : 0)
    }

    /// Appends a string: the length as a `uint32`, then the bytes. Traps when there are
    /// more than `UInt32.max` bytes (a programmer error: no agent message is that long).
    public mutating func string(_ value: some Collection<UInt8>) {
        uint32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends text as a string of its UTF-8 bytes.
    public mutating func string(_ text: String) {
        string(text.utf8)
    }

    /// Appends an unsigned big-endian integer as an mpint (RFC 4251): leading zeros
    /// dropped, one zero byte added when the top bit is set, nothing at all for zero.
    public mutating func mpint(_ magnitude: some Collection<UInt8>) {
        let digits = magnitude.drop { $0 == 0 }
        let padded = (digits.first ?? 0) & 0x80 != 0
        uint32(UInt32(digits.count + (padded ? 1 : 0)))
        if padded { bytes.append(0) }
        bytes.append(contentsOf: digits)
    }

    /// Appends bytes as they are, with no length (a magic preamble, an extension's contents).
    public mutating func raw(_ value: some Sequence<UInt8>) {
        bytes.append(contentsOf: value)
    }
}
