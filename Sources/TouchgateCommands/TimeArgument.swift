import TouchgateAPI
import TouchgateTerminal
import FoundationEssentials

/// A moment typed on the command line (`audit show --since`, `--until`).
///
/// Three forms, in UTC unless a zone is given (the times `audit show` prints are UTC):
/// - a day, `2026-11-21`: its first instant;
/// - a time, `2026-11-21T09:30`, `2026-11-21 09:30:15`, `2026-11-21T09:30:15.250Z`,
///   `2026-11-21T10:30:15+01:00`;
/// - a time ago: a whole number and a unit, `45s`, `30m`, `2h`, `3d`, `1w`.
enum TimeArgument {
    /// What `--help` and errors say the forms are.
    static let forms = "a day (2026-11-21), a time (2026-11-21T09:30:00, UTC unless a zone such as Z or "
        + "+01:00 is given) or a time ago (30m, 2h, 3d, 1w)"

    /// The moment `text` names, with `now` for the relative forms; `nil` when it is none of them.
    static func parse(_ text: String, now: Date) -> Date? {
        if let ago = secondsAgo(text) { return now.addingTimeInterval(-ago) }
        return absolute(text)
    }

    /// `2h` → 7200; `nil` unless digits then one of `s`, `m`, `h`, `d`, `w`.
    static func secondsAgo(_ text: String) -> TimeInterval? {
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let unit = text.last.flatMap({ units[$0] }) else { return nil }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy(\.isASCIIDigit), let count = Int(digits) else {
            return nil
        }
        return TimeInterval(count) * unit
    }

    /// A day or a time of day, as described on the type.
    static func absolute(_ text: String) -> Date? {
        var scanner = Cursor(Array(text.utf8))
        guard let year = scanner.number(digits: 4), scanner.skip("-"), let month = scanner.number(digits: 2),
              scanner.skip("-"), let day = scanner.number(digits: 2) else { return nil }
        var components = DateComponents(year: year, month: month, day: day, hour: 0, minute: 0, second: 0)
        var fraction = 0.0
        var offset = 0
        if !scanner.atEnd {
            guard scanner.skip("T") || scanner.skip("t") || scanner.skip(" "),
                  let hour = scanner.number(digits: 2), scanner.skip(":"), let minute = scanner.number(digits: 2)
            else { return nil }
            components.hour = hour
            components.minute = minute
            if scanner.skip(":") {
                guard let second = scanner.number(digits: 2) else { return nil }
                components.second = second
                if scanner.skip(".") || scanner.skip(",") {
                    let start = scanner.position
                    var digits = ""
                    while let digit = scanner.digit() { digits += String(digit) }
                    guard scanner.position > start, let value = Double("0." + digits) else { return nil }
                    fraction = value
                }
            }
            if scanner.skip("Z") || scanner.skip("z") {
                offset = 0
            } else if let sign = scanner.sign() {
                guard let hours = scanner.number(digits: 2) else { return nil }
                _ = scanner.skip(":")
                guard let minutes = scanner.number(digits: 2), hours <= 23, minutes <= 59 else { return nil }
                offset = sign * (hours * 3600 + minutes * 60)
            }
            guard scanner.atEnd, components.hour! <= 23, components.minute! <= 59, components.second! <= 59 else {
                return nil
            }
        }
        var calendar = Calendar(identifier: .gregorian)
        // GMT by value: without ICU no zone is known by name (TimeZone(identifier: "UTC") is nil).
        calendar.timeZone = .gmt
        guard let date = calendar.date(from: components),
              calendar.dateComponents([.year, .month, .day], from: date) == DateComponents(year: year, month: month, day: day)
        else { return nil }  // 2026-02-30 is not a day
        return date.addingTimeInterval(fraction - TimeInterval(offset))
    }

    /// Reads ASCII text one byte at a time.
    private struct Cursor {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        /// Consumes `character` if it comes next.
        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard !atEnd, bytes[position] == UInt8(ascii: character) else { return false }
            position += 1
            return true
        }

        /// Consumes one decimal digit.
        mutating func digit() -> Int? {
            guard !atEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else { return nil }
            defer { position += 1 }
            return Int(bytes[position] - UInt8(ascii: "0"))
        }

        /// Consumes exactly `digits` decimal digits.
        mutating func number(digits: Int) -> Int? {
            var value = 0
            for _ in 0..<digits {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        /// Consumes `+` (1) or `-` (-1).
        mutating func sign() -> Int? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}

private extension Character {
    /// `0` to `9` only (not other scripts' digits).
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
