extension StringProtocol {
    /// This text without the white space (Unicode's White_Space: blanks, tabs, newlines) at
    /// either end. FoundationEssentials has no `trimmingCharacters(in:)`, and the whole of
    /// Foundation for it would bring ICU's data into the program.
    public func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
