/// Rules for text that is stored and later shown: item names, user names.
///
/// Names are checked when they come in (no control characters, so nothing stored can
/// move a terminal's cursor, change its colours or fake a line), and anything shown
/// from the store is escaped again on the way out, so that a database edited by hand
/// cannot inject either.
public enum StoredText {
    /// The longest accepted name, in bytes.
    public static let maximumNameBytes = 256

    /// Why `name` cannot be used as the name of a `what` (e.g. "secret"), or nil when it can.
    ///
    /// Besides length and control characters, a name must look like what it is: two
    /// names that print the same must be the same name. So it must not be only white
    /// space, start or end with white space, hold a space other than the plain one
    /// (U+0020), or hold an invisible character: a format character (Unicode category
    /// Cf: U+200B…U+200F, U+2060…U+2064, U+FEFF, U+00AD, …), a variation selector, or any
    /// other default-ignorable code point. Canonically equivalent spellings (`café`
    /// composed or decomposed) are one name once normalised to NFC, which the service does
    /// before it checks (this module has no Foundation to do it with).
    public static func problem(withName name: String, what: String) -> String? {
        if name.isEmpty { return "the \(what) name must not be empty" }
        if name.utf8.count > maximumNameBytes {
            return "the \(what) name is longer than \(maximumNameBytes) bytes"
        }
        if let bad = name.unicodeScalars.first(where: isControl) {
            return "the \(what) name contains a control character (U+\(hex(bad.value))); "
                + "use letters, digits, spaces and punctuation"
        }
        let scalars = name.unicodeScalars
        if scalars.allSatisfy(isSpace) {
            return "the \(what) name is only white space; give it a name that shows, such as letters or digits"
        }
        if let first = scalars.first, isSpace(first) {
            return "the \(what) name starts with white space (\(described(first))), which does not show; "
                + "remove it"
        }
        if let last = scalars.last, isSpace(last) {
            return "the \(what) name ends with white space (\(described(last))), which does not show; remove it"
        }
        if let bad = scalars.first(where: isInvisible) {
            return "the \(what) name contains an invisible character (\(described(bad))), so it would print "
                + "like another name; remove it and use letters, digits, punctuation and plain spaces"
        }
        if let bad = scalars.first(where: { isSpace($0) && $0 != " " }) {
            return "the \(what) name contains a special space (\(described(bad))) that looks like a plain "
                + "one; use a plain space (U+0020)"
        }
        return nil
    }

    /// Whether `scalar` shows nothing by itself and may be ignored when text is displayed:
    /// Unicode's default-ignorable code points, which include every format character (Cf)
    /// used in names (zero-width spaces and joiners, the word joiner, the byte order mark,
    /// the soft hyphen, bidirectional marks) and the variation selectors.
    public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        return properties.isDefaultIgnorableCodePoint || properties.generalCategory == .format
            || properties.isVariationSelector
    }

    private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace
    }

    /// `U+200B ZERO WIDTH SPACE`: the code point and, where Unicode has one, its name.
    private static func described(_ scalar: Unicode.Scalar) -> String {
        let code = "U+\(hex(scalar.value))"
        guard let name = scalar.properties.name else { return code }
        return "\(code) \(name)"
    }

    /// A hop an SSH key may be used over, as `ssh-add -h` writes it: `first>user@second`, or
    /// `user@second` from the agent's own machine (`from` nil), names escaped.
    public static func hop(from: String?, user: String?, to: String) -> String {
        let destination = (user.map { escaped($0) + "@" } ?? "") + escaped(to)
        return from.map { escaped($0) + ">" + destination } ?? destination
    }

    /// `text` safe to print on a terminal: control characters (C0, DEL, C1, and the line
    /// and paragraph separators) become `\u{…}` escapes; everything else is kept.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                out.append(contentsOf: "\\u{\(hex(scalar.value))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029
            || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
