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
    public static func problem(withName name: String, what: String) -> String? {
        if name.isEmpty { return "the \(what) name must not be empty" }
        if name.utf8.count > maximumNameBytes {
            return "the \(what) name is longer than \(maximumNameBytes) bytes"
        }
        if let bad = name.unicodeScalars.first(where: isControl) {
            return "the \(what) name contains a control character (U+\(hex(bad.value))); "
                + "use letters, digits, spaces and punctuation"
        }
        return nil
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
