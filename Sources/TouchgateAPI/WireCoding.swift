public import Foundation

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
    static func kebab(_ name: String) -> String {
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
    /// ``kebab(_:)`` for names whose acronyms are `ID`).
    static func camel(_ key: String) -> String {
        let parts = key.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first else { return key }
        return String(first) + parts.dropFirst().map { $0 == "id" ? "ID" : $0.prefix(1).uppercased() + $0.dropFirst() }
            .joined()
    }
}

/// A coding key made from a computed string.
struct WireKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
