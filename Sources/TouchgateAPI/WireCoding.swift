public import FoundationEssentials

/// The one JSON form of every wire type: compact, keys sorted, kebab-case keys
/// (`deviceID` is `device-id`, `remainingSeconds` is `remaining-seconds`), slashes
/// unescaped. `--json` output and the daemon protocol both use it.
public enum WireCoding {
    /// An encoder for wire types.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .custom { path in WireKey(kebab(path.last!.stringValue)) }
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// A decoder that reads what ``encoder()`` writes.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in WireKey(camel(path.last!.stringValue)) }
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// `value` as one line of JSON (no newline).
    public static func line<T: Encodable>(_ value: T) -> String {
        guard let data = try? encoder().encode(value) else {
            // Wire types hold only strings, numbers and booleans: encoding cannot fail.
            preconditionFailure("a wire type failed to encode")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// `deviceID` → `device-id`; `remainingSeconds` → `remaining-seconds`.
    ///
    /// Over the UTF-8 bytes: every key of every request and reply passes through here, and
    /// Swift's property names are ASCII (measured: Unicode character properties made the
    /// key conversion a tenth of touchgated's time per `status`). Other names take the
    /// general path.
    static func kebab(_ name: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count + 4)
        var previous: UInt8 = 0
        for byte in name.utf8 {
            guard byte < 0x80 else { return kebabUnicode(name) }
            if isUpper(byte) {
                if isLower(previous) || isDigit(previous) { bytes.append(UInt8(ascii: "-")) }
                bytes.append(byte | 0x20)
            } else {
                bytes.append(byte)
            }
            previous = byte
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func kebabUnicode(_ name: String) -> String {
        var out = ""
        var previous: Character?
        for character in name {
            if character.isUppercase, let previous, previous.isLowercase || previous.isNumber {
                out.append("-")
            }
            out.append(contentsOf: character.lowercased())
            previous = character
        }
        return out
    }

    /// `device-id` → `deviceID`; `remaining-seconds` → `remainingSeconds` (the inverse of
    /// ``kebab(_:)`` for names whose acronyms are `ID`). Over the bytes, as ``kebab(_:)``.
    static func camel(_ key: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(key.utf8.count)
        var upperNext = false
        var partStart = true
        let utf8 = Array(key.utf8)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "-") {
                upperNext = true
                partStart = true
                index += 1
                continue
            }
            // A part that is exactly `id` is the acronym `ID`.
            if upperNext, partStart, byte == UInt8(ascii: "i"), index + 1 < utf8.count, utf8[index + 1] == UInt8(ascii: "d"),
               index + 2 == utf8.count || utf8[index + 2] == UInt8(ascii: "-") {
                bytes.append(contentsOf: [UInt8(ascii: "I"), UInt8(ascii: "D")])
                index += 2
                upperNext = false
                partStart = false
                continue
            }
            bytes.append(upperNext && isLower(byte) ? byte & ~0x20 : byte)
            upperNext = false
            partStart = false
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isUpper(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }
    private static func isLower(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
}

/// A coding key made from a computed string.
struct WireKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
