/// Lowercase hexadecimal: the text form of every digest, MAC, nonce and key id that
/// Touchgate stores, exports or shows.
///
/// ``encode(_:)`` writes two lowercase digits a byte, high nibble first. Its output is
/// part of stored formats (enrollment digests, audit exports and journald fields,
/// kernel keyring key descriptions, item versions), so it must never change.
/// ``decode(_:)`` reads it back and also accepts upper-case digits.
public enum Hex {
    /// `bytes` as lowercase hexadecimal, two digits a byte; empty when there are no bytes.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` spells in hexadecimal (digits of either case, two a byte), or
    /// `nil` when it has an odd number of characters or anything but hex digits
    /// (no prefix, no separators, no white space). Empty text is zero bytes.
    public static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let high = value(of: characters[index]), let low = value(of: characters[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The digits ``encode(_:)`` writes, by value.
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The value of one hex digit (an ASCII code unit), or `nil` for any other.
    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
