/// Identifies one boot of the machine (Linux: `/proc/sys/kernel/random/boot_id`).
///
/// The monotonic boot-time clock restarts at zero on every boot, so a
/// ``MonotonicInstant`` is only comparable with another of the same boot.
public struct BootID: Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The identifier as read from the kernel (a UUID on Linux).
    public let rawValue: String

    /// Wraps an identifier read from the kernel or from storage.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Wraps a literal identifier (for tests).
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The identifier itself.
    public var description: String { rawValue }

    /// Encodes as a plain string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Decodes from a plain string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }
}
