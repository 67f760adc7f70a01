/// The identifier of one enrolled print, as the vault names it (never the template).
public struct EnrolledPrintID: StringIdentifier {
    /// The identifier text.
    public let rawValue: String

    /// Wraps an identifier.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }
}
