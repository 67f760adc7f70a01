/// The identifier of one enrolled print, as the vault names it (never the template).
public struct EnrolledPrintID: Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The identifier text.
    public let rawValue: String

    /// Wraps an identifier.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Wraps a literal identifier.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The identifier text.
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
