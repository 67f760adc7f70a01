/// As much JSON as the front needs, without Foundation. The daemon writes every message in
/// WireCoding's form (compact, keys sorted, slashes unescaped), which is also the form
/// touchgate-cli prints with `--json`; so the front copies the daemon's values through
/// byte for byte, reads the few it acts on, and writes its own in the same form.
struct JSONObject {
    /// The text the object was found in.
    let text: [UInt8]
    /// Each member's key and where its value lies in ``text``, in order.
    let members: [(key: String, value: Range<Int>)]

    /// The object that is the whole of `line` (surrounding white space allowed), or nil
    /// when it is not one well-formed JSON object.
    init?(line: [UInt8]) {
        guard String(validating: line, as: UTF8.self) != nil else { return nil }
        var scanner = JSONScanner(text: line)
        scanner.skipSpace()
        let start = scanner.index
        guard scanner.skipValue(depth: 0), line[start] == UInt8(ascii: "{") else { return nil }
        scanner.skipSpace()
        guard scanner.index == line.count else { return nil }
        self.init(text: line, range: start..<scanner.index)
    }

    /// The object at `range` of `text`, already checked well-formed.
    private init?(text: [UInt8], range: Range<Int>) {
        var scanner = JSONScanner(text: text, index: range.lowerBound + 1)
        var members: [(key: String, value: Range<Int>)] = []
        scanner.skipSpace()
        while scanner.index < range.upperBound - 1 {
            let keyStart = scanner.index
            guard scanner.skipValue(depth: 0), let key = JSONText.string(text[keyStart..<scanner.index]) else { return nil }
            scanner.skipSpace()
            scanner.index += 1  // the colon
            scanner.skipSpace()
            let valueStart = scanner.index
            guard scanner.skipValue(depth: 0) else { return nil }
            members.append((key, valueStart..<scanner.index))
            scanner.skipSpace()
            if scanner.index < text.count, text[scanner.index] == UInt8(ascii: ",") { scanner.index += 1 }
            scanner.skipSpace()
        }
        self.text = text
        self.members = members
    }

    /// The raw text of `key`'s value.
    func raw(_ key: String) -> ArraySlice<UInt8>? {
        members.last { $0.key == key }.map { text[$0.value] }
    }

    /// `key`'s value as an object.
    func object(_ key: String) -> JSONObject? {
        guard let value = members.last(where: { $0.key == key })?.value, text[value.lowerBound] == UInt8(ascii: "{")
        else { return nil }
        return JSONObject(text: text, range: value)
    }

    /// `key`'s value as a string.
    func string(_ key: String) -> String? { raw(key).flatMap(JSONText.string) }

    /// `key`'s value as an integer.
    func integer(_ key: String) -> Int? {
        raw(key).flatMap { Int(String(decoding: $0, as: UTF8.self)) }
    }

    /// `key`'s value as a boolean.
    func boolean(_ key: String) -> Bool? {
        switch raw(key).map(Array.init) {
        case Array("true".utf8)?: true
        case Array("false".utf8)?: false
        default: nil
        }
    }

    /// `key`'s value as an array of integers.
    func integers(_ key: String) -> [Int]? {
        guard let raw = raw(key), raw.first == UInt8(ascii: "["), raw.last == UInt8(ascii: "]") else { return nil }
        let inside = raw.dropFirst().dropLast().filter { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        if inside.isEmpty { return [] }
        let numbers = inside.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            .map { Int(String(decoding: $0, as: UTF8.self)) }
        return numbers.contains(nil) ? nil : numbers.compactMap { $0 }
    }
}

/// Walks a JSON text, checking its form (RFC 8259) without building values.
private struct JSONScanner {
    let text: [UInt8]
    var index = 0

    /// Deeper nesting than this is refused: nothing the daemon sends comes near it.
    static let maximumDepth = 32

    mutating func skipSpace() {
        while index < text.count, [0x20, 0x09, 0x0A, 0x0D].contains(text[index]) { index += 1 }
    }

    /// Moves past one value; false when there is none well-formed here.
    mutating func skipValue(depth: Int) -> Bool {
        guard index < text.count, depth <= Self.maximumDepth else { return false }
        switch text[index] {
        case UInt8(ascii: "{"): return skipContainer(close: UInt8(ascii: "}"), keyed: true, depth: depth)
        case UInt8(ascii: "["): return skipContainer(close: UInt8(ascii: "]"), keyed: false, depth: depth)
        case UInt8(ascii: "\""): return skipString()
        case UInt8(ascii: "t"): return skipLiteral("true")
        case UInt8(ascii: "f"): return skipLiteral("false")
        case UInt8(ascii: "n"): return skipLiteral("null")
        default: return skipNumber()
        }
    }

    private mutating func skipContainer(close: UInt8, keyed: Bool, depth: Int) -> Bool {
        index += 1
        skipSpace()
        if index < text.count, text[index] == close {
            index += 1
            return true
        }
        while true {
            if keyed {
                guard index < text.count, text[index] == UInt8(ascii: "\""), skipString() else { return false }
                skipSpace()
                guard index < text.count, text[index] == UInt8(ascii: ":") else { return false }
                index += 1
                skipSpace()
            }
            guard skipValue(depth: depth + 1) else { return false }
            skipSpace()
            guard index < text.count else { return false }
            if text[index] == close {
                index += 1
                return true
            }
            guard text[index] == UInt8(ascii: ",") else { return false }
            index += 1
            skipSpace()
        }
    }

    private mutating func skipString() -> Bool {
        index += 1
        while index < text.count {
            switch text[index] {
            case UInt8(ascii: "\""):
                index += 1
                return true
            case UInt8(ascii: "\\"):
                guard index + 1 < text.count else { return false }
                if text[index + 1] == UInt8(ascii: "u") {
                    // A UTF-16 unit; surrogates only as a high-low pair, as Foundation requires.
                    guard let code = unit(at: index) else { return false }
                    index += 6
                    if (0xDC00...0xDFFF).contains(code) { return false }
                    if (0xD800...0xDBFF).contains(code) {
                        guard let low = unit(at: index), (0xDC00...0xDFFF).contains(low) else { return false }
                        index += 6
                    }
                } else {
                    guard "\"\\/bfnrt".utf8.contains(text[index + 1]) else { return false }
                    index += 2
                }
            case 0..<0x20:
                return false
            default:
                index += 1
            }
        }
        return false
    }

    /// The value of a `\uXXXX` escape starting at `start`, or nil.
    private func unit(at start: Int) -> UInt32? {
        guard text.count - start >= 6, text[start] == UInt8(ascii: "\\"), text[start + 1] == UInt8(ascii: "u") else { return nil }
        var value: UInt32 = 0
        for byte in text[start + 2..<start + 6] {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = value << 4 | UInt32(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        return value
    }

    private mutating func skipLiteral(_ literal: StaticString) -> Bool {
        let bytes = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard text.count - index >= bytes.count, text[index..<index + bytes.count].elementsEqual(bytes) else { return false }
        index += bytes.count
        return true
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, within a Double's range
    /// (Foundation refuses larger ones too).
    private mutating func skipNumber() -> Bool {
        let start = index
        guard skipNumberGrammar() else { return false }
        return Double(String(decoding: text[start..<index], as: UTF8.self))?.isFinite == true
    }

    private mutating func skipNumberGrammar() -> Bool {
        func digits() -> Int {
            let start = index
            while index < text.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) { index += 1 }
            return index - start
        }
        if index < text.count, text[index] == UInt8(ascii: "-") { index += 1 }
        guard index < text.count else { return false }
        if text[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return false
        }
        if index < text.count, text[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if index < text.count, text[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < text.count, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return true
    }
}

/// Reading and writing JSON strings and objects.
enum JSONText {
    /// The string a quoted JSON string token stands for, or nil when it is not valid.
    static func string(_ token: ArraySlice<UInt8>) -> String? {
        guard token.count >= 2, token.first == UInt8(ascii: "\""), token.last == UInt8(ascii: "\"") else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(token.count)
        var index = token.startIndex + 1
        let end = token.endIndex - 1
        var pendingHigh: UInt32?
        while index < end {
            let byte = token[index]
            guard byte == UInt8(ascii: "\\") else {
                guard pendingHigh == nil else { return nil }
                bytes.append(byte)
                index += 1
                continue
            }
            guard index + 1 < end else { return nil }
            let escape = token[index + 1]
            index += 2
            if escape == UInt8(ascii: "u") {
                guard index + 4 <= end, let unit = UInt32(String(decoding: token[index..<index + 4], as: UTF8.self), radix: 16)
                else { return nil }
                index += 4
                var scalarValue = unit
                if let high = pendingHigh {
                    guard (0xDC00...0xDFFF).contains(unit) else { return nil }
                    scalarValue = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)
                    pendingHigh = nil
                } else if (0xD800...0xDBFF).contains(unit) {
                    pendingHigh = unit
                    continue
                }
                guard let scalar = Unicode.Scalar(scalarValue) else { return nil }
                bytes.append(contentsOf: String(Character(scalar)).utf8)
                continue
            }
            guard pendingHigh == nil else { return nil }
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(escape)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            default: return nil
            }
        }
        guard pendingHigh == nil else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Calls `emit` with the bytes of valid UTF-8 `bytes` as the inside of a JSON string,
    /// escaped as Foundation's JSONEncoder escapes (what WireCoding writes): `"` and `\`,
    /// the short forms `\b \t \n \f \r`, other control characters as `\u00xx`, and
    /// everything else, `/` included, as it is.
    static func escape(_ bytes: some Sequence<UInt8>, _ emit: (UInt8) -> Void) {
        let hex = Array("0123456789abcdef".utf8)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                emit(UInt8(ascii: "\\"))
                emit(byte)
            case 0x08: emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "b"))
            case 0x09: emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "t"))
            case 0x0A: emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "n"))
            case 0x0C: emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "f"))
            case 0x0D: emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "r"))
            case 0..<0x20:
                for character in "\\u00".utf8 { emit(character) }
                emit(hex[Int(byte >> 4)])
                emit(hex[Int(byte & 0x0F)])
            default:
                emit(byte)
            }
        }
    }

    /// `text` as a JSON string token.
    static func quoted(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        escape(text.utf8) { out.append($0) }
        out.append(UInt8(ascii: "\""))
        return out
    }

    /// An object of `members` (key, raw value), keys sorted as WireCoding sorts them (by
    /// their bytes).
    static func object(_ members: [(String, [UInt8])]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.sorted(by: { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += quoted(member.0)
            out.append(UInt8(ascii: ":"))
            out += member.1
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
