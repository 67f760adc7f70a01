/// A string identifier with a type of its own, so that different kinds of id cannot be mixed
/// up. Conformers provide ``rawValue`` and ``init(_:)``; this protocol gives them literals, a
/// description and a Codable form that is the plain string.
public protocol StringIdentifier: Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The identifier text.
    var rawValue: String { get }
    /// Wraps an identifier.
    init(_ rawValue: String)
}

extension StringIdentifier {
    /// Wraps a literal identifier (for tests).
    public init(stringLiteral value: String) { self.init(value) }

    /// The identifier text.
    public var description: String { rawValue }

    /// Encodes as a plain string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Decodes from a plain string.
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }
}
