import TouchgateAPI

/// Takes the secrets a command ran with out of what it prints, before anything reaches the
/// caller (an AI agent's transcript): each value as it is, and as base64 (standard and URL
/// alphabets, at any of the three alignments it can take inside a longer text), hex (either
/// case), URL-encoded and JSON-escaped. Written by hand because it is the boundary between
/// a secret and a transcript: it works on bytes, over a stream, and holds back only bytes
/// that could still begin a value.
///
/// What it cannot catch is said in docs/INTEGRATIONS.md: a value sent elsewhere, or shown
/// transformed in any other way (split, reversed, compressed, encrypted).
struct Redaction {
    /// One form of one value, and what replaces it.
    private struct Pattern {
        let bytes: [UInt8]
        let replacement: [UInt8]
    }

    private var patterns: [Pattern]
    /// Which bytes begin some form: every other byte is passed on without a look at the
    /// forms (measured: looking at each form for each byte made the filter 27 MiB/s).
    private var begins = [Bool](repeating: false, count: 256)
    private var pending: [UInt8] = []

    /// A filter for `values`, each named by its variable in the replacement (`[GITHUB_TOKEN hidden]`).
    init(_ values: [(name: String, value: [UInt8])]) {
        var patterns: [Pattern] = []
        for (name, value) in values where !value.isEmpty {
            let replacement = Array("[\(name) hidden]".utf8)
            for form in Self.forms(of: value) where !form.isEmpty {
                patterns.append(Pattern(bytes: form, replacement: replacement))
            }
        }
        // Longest first: where two forms start at the same byte, the whole one is taken.
        patterns.sort { $0.bytes.count > $1.bytes.count }
        self.patterns = patterns
        for pattern in patterns { begins[Int(pattern.bytes[0])] = true }
    }

    /// Every form of `value` the filter looks for.
    static func forms(of value: [UInt8]) -> [[UInt8]] {
        var forms: Set<[UInt8]> = [value]
        forms.insert(Array(hex(value, upper: false).utf8))
        forms.insert(Array(hex(value, upper: true).utf8))
        // URL encodings differ in what they leave as it is: RFC 3986's unreserved characters
        // (Python's quote, curl), or letters and digits only (Foundation's .alphanumerics).
        forms.insert(Array(percentEncoded(value, keeping: Array("-._~".utf8)).utf8))
        forms.insert(Array(percentEncoded(value, keeping: []).utf8))
        forms.insert(jsonEscaped(value, slash: false))
        forms.insert(jsonEscaped(value, slash: true))
        for alphabet in [standardAlphabet, urlAlphabet] {
            for offset in 0..<3 {
                // The characters that depend on the value's bits alone, wherever it starts
                // in a longer text; too short a core would hide innocent text, so only
                // values long enough are looked for in the shifted alignments.
                let encoded = base64([UInt8](repeating: 0, count: offset) + value, alphabet: alphabet)
                let start = (offset * 8 + 5) / 6
                let end = (offset + value.count) * 8 / 6
                guard end > start else { continue }
                let core = Array(encoded[start..<end])
                if offset == 0 || core.count >= 8 { forms.insert(core) }
                if offset == 0 { forms.insert(encoded) }
            }
        }
        return Array(forms)
    }

    /// Filters `chunk`; what is returned can be shown. Bytes that may begin a value are held
    /// until the next chunk (or ``finish()``) tells.
    mutating func filter(_ chunk: [UInt8]) -> [UInt8] {
        pending += chunk
        return drain(final: false)
    }

    /// The rest, at the end of the stream.
    mutating func finish() -> [UInt8] {
        drain(final: true)
    }

    /// Forgets the forms of the values (the filter is not used after).
    mutating func wipe() {
        for index in patterns.indices {
            patterns[index] = Pattern(bytes: [UInt8](repeating: 0, count: patterns[index].bytes.count), replacement: [])
        }
        patterns.removeAll()
        pending.removeAll()
        begins = [Bool](repeating: false, count: 256)
    }

    private mutating func drain(final: Bool) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(pending.count)
        var index = 0
        scanning: while index < pending.count {
            // The run of bytes that begin no form goes on at once.
            var plain = index
            while plain < pending.count, !begins[Int(pending[plain])] { plain += 1 }
            if plain > index {
                output.append(contentsOf: pending[index..<plain])
                index = plain
                continue
            }
            var couldBegin = false
            // Longest first: a shorter form is taken only when no longer one can still match
            // here (a padded base64 tail, a value that begins another).
            for pattern in patterns where pattern.bytes[0] == pending[index] {
                let available = pending.count - index
                if available >= pattern.bytes.count {
                    if pending[index..<index + pattern.bytes.count].elementsEqual(pattern.bytes) {
                        if couldBegin { break scanning }
                        output += pattern.replacement
                        index += pattern.bytes.count
                        continue scanning
                    }
                } else if !final, pending[index...].elementsEqual(pattern.bytes[..<available]) {
                    couldBegin = true
                }
            }
            // A value may begin here and end in the next chunk: hold the rest until it is known.
            if couldBegin { break }
            output.append(pending[index])
            index += 1
        }
        pending.removeFirst(index)
        return output
    }

    // MARK: Encodings (written here: a few lines each, over bytes, with no copy of the value in a String)

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func base64(_ bytes: [UInt8], alphabet: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8) | UInt32(chunk.count > 2 ? chunk[2] : 0)
            for position in 0..<4 {
                if position <= chunk.count {
                    output.append(alphabet[Int((value >> UInt32(18 - 6 * position)) & 0x3F)])
                } else if alphabet == standardAlphabet {
                    output.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return output
    }

    static func hex(_ bytes: [UInt8], upper: Bool) -> String {
        let digits = Array((upper ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }, as: UTF8.self)
    }

    static func percentEncoded(_ bytes: [UInt8], keeping marks: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            let unreserved = (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || marks.contains(byte)
            if unreserved {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func jsonEscaped(_ bytes: [UInt8], slash: Bool) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): output += Array("\\\"".utf8)
            case UInt8(ascii: "\\"): output += Array("\\\\".utf8)
            case UInt8(ascii: "/") where slash: output += Array("\\/".utf8)
            case 0x0A: output += Array("\\n".utf8)
            case 0x0D: output += Array("\\r".utf8)
            case 0x09: output += Array("\\t".utf8)
            case 0..<0x20: output += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            default: output.append(byte)
            }
        }
        return output
    }
}
