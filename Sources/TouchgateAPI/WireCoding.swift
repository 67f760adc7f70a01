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
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(iso8601(date))
        }
        return encoder
    }

    /// `date` as Foundation's ISO 8601 style writes it (`2026-11-29T10:10:25Z`, the second
    /// it falls in, UTC), made without Foundation's calendar for years 1600 to 9999 (measured
    /// with ``wholeSecondsUTC(_:)``: the format style's first use was a third of
    /// `touchgate status`'s own time); other years (Foundation's calendar is Julian before
    /// 1582) go to the format style. WireCodingTests compares
    /// the two over a range of dates.
    public static func iso8601(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        // 1600-01-01 and 10000-01-01 in seconds since 1970: Foundation's calendar is Julian
        // before 1582, and four digits end at 9999.
        guard seconds >= -11_676_096_000, seconds < 253_402_300_800 else { return date.formatted(.iso8601) }
        let total = Int(seconds)
        let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        let inDay = total - days * 86_400
        // Civil date from days since 1970-01-01 (proleptic Gregorian).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(0x30 + (value / divisor) % 10))
                divisor /= 10
            }
        }
        digits(year, 4); bytes.append(0x2D); digits(month, 2); bytes.append(0x2D); digits(day, 2)
        bytes.append(0x54); digits(inDay / 3_600, 2); bytes.append(0x3A); digits(inDay / 60 % 60, 2)
        bytes.append(0x3A); digits(inDay % 60, 2); bytes.append(0x5A)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A decoder that reads what ``encoder()`` writes.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in WireKey(camel(path.last!.stringValue)) }
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            if let date = wholeSecondsUTC(text) { return date }
            guard let date = try? Date.ISO8601FormatStyle().parse(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "Expected date string to be ISO8601-formatted."))
            }
            return date
        }
        return decoder
    }

    /// `2026-11-29T10:10:25Z`, the form ``encoder()`` writes every date in, read without
    /// Foundation's calendar: measured, the ISO 8601 format style's first use (a calendar
    /// and time zone set up per process) was a third of `touchgate status`'s own time
    /// (2.7 ms of CPU before, 1.8 after). Nil for any other form, which the format style
    /// then reads.
    static func wholeSecondsUTC(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54, bytes[13] == 0x3A,
              bytes[16] == 0x3A, bytes[19] == 0x5A else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), year >= 1600, let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second < 60 else { return nil }
        // Days since 1970-01-01 in the proleptic Gregorian calendar (civil-from-days, inverted).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
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
