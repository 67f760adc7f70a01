/// Trimming and file paths as plain text, for code without the full Foundation: what its
/// `trimmingCharacters(in:)` and `NSString` path methods did, with the same results.
extension StringProtocol {
    /// Without the white space and line breaks at either end: what Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` removed (Unicode's White_Space
    /// scalars, and the zero width space its set also holds), scalar by scalar as it did.
    public func trimmingWhitespace() -> String {
        trimming { $0.properties.isWhitespace || $0 == "\u{200B}" }
    }

    /// Without the spaces and tabs at either end: what `trimmingCharacters(in: .whitespaces)`
    /// removed (Unicode's space separators, the tab and the zero width space).
    public func trimmingSpaces() -> String {
        trimming { $0 == "\t" || $0 == "\u{200B}" || $0.properties.generalCategory == .spaceSeparator }
    }

    /// Without the scalars `trimmed` accepts at either end (scalars, not characters: a
    /// combining mark after a trimmed space stays, as with Foundation's trimming).
    public func trimming(where trimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = String(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !trimmed($0) }),
              let last = scalars.lastIndex(where: { !trimmed($0) }) else { return "" }
        return String(scalars[first...last])
    }
}

/// The `NSString` path methods of swift-corelibs-foundation, on plain strings and with its
/// exact results (slashes compressed, a trailing one dropped; no file system access).
public enum PathText {
    /// `path` without its last component: `deletingLastPathComponent` ("" for a single
    /// relative component, "/" for a single absolute one).
    public static func deletingLastComponent(of path: String) -> String {
        let fixed = fixingSlashes(path)
        if fixed == "/" || fixed.isEmpty { return fixed }
        let start = startOfLastComponent(fixed)
        if start == fixed.startIndex { return "" }
        if start == fixed.index(after: fixed.startIndex) { return "/" }
        return String(fixed[..<fixed.index(before: start)])
    }

    /// The last component of `path`: `lastPathComponent`.
    public static func lastComponent(of path: String) -> String {
        let fixed = fixingSlashes(path)
        if fixed.count <= 1 { return fixed }
        return String(fixed[startOfLastComponent(fixed)...])
    }

    /// `component` after `path`, a slash between unless `path` ends with one:
    /// `appendingPathComponent`.
    public static func appending(_ component: String, to path: String) -> String {
        if component.isEmpty { return path }
        if path.isEmpty { return component }
        return path.hasSuffix("/") ? path + component : path + "/" + component
    }

    /// The extension of the last component of `path`, without its dot ("" when none):
    /// `pathExtension`.
    public static func pathExtension(of path: String) -> String {
        let fixed = fixingSlashes(path)
        if fixed.count <= 1 { return "" }
        let startOfLast = startOfLastComponent(fixed)
        var position = fixed.endIndex
        while position > startOfLast {
            let previous = fixed.index(before: position)
            if fixed[previous] == "/" { return "" }
            if fixed[previous] == "." {
                if previous == startOfLast { return "" }
                let beforeDot = fixed.index(before: previous)
                if previous == fixed.index(before: fixed.endIndex) && beforeDot == startOfLast && fixed[beforeDot] == "." {
                    return ""
                }
                return String(fixed[position...])
            }
            position = previous
        }
        return ""
    }

    /// `path` with every run of slashes made one and a trailing slash dropped ("/" stays).
    private static func fixingSlashes(_ path: String) -> String {
        if path == "/" { return path }
        var result = ""
        var afterSlash = false
        for character in path {
            if character == "/" {
                if !afterSlash { result.append(character) }
                afterSlash = true
            } else {
                result.append(character)
                afterSlash = false
            }
        }
        if result.hasSuffix("/") { result.removeLast() }
        return result
    }

    /// Where the last component of a path without a trailing slash starts.
    private static func startOfLastComponent(_ path: String) -> String.Index {
        var position = path.endIndex
        while position > path.startIndex {
            let previous = path.index(before: position)
            if path[previous] == "/" { break }
            position = previous
        }
        return position
    }
}

extension BinaryInteger {
    /// The number in `radix` (lowercase digits) with zeros before it to `width` characters,
    /// the sign counted: what printf's `%0<width>d` (`o`, `x` in radix 8, 16) writes.
    public func zeroPadded(_ width: Int, radix: Int = 10) -> String {
        let digits = String(magnitude, radix: radix)
        let sign = self < 0 ? "-" : ""
        return sign + String(repeating: "0", count: max(0, width - sign.count - digits.count)) + digits
    }
}
