import Foundation
import Testing
import TouchgateTerminal

/// Times in status lines, formatted without ICU.
@Suite struct ShownTimeTests {
    @Test("a moment reads as day, month, year and 24-hour local time, as Foundation's calendar has it")
    func readsAsLocalTime() {
        for seconds in [0.0, 1_795_668_819, 1_800_000_059.9, 951_782_400] {
            let date = Date(timeIntervalSince1970: seconds)
            let parts = Calendar.current.dateComponents([.year, .month, .day, .hour, .minute], from: date)
            let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][parts.month! - 1]
            let expected = "\(parts.day!) \(month) \(parts.year!) at "
                + String(parts.hour! + 100).dropFirst() + ":" + String(parts.minute! + 100).dropFirst()
            #expect(ShownTime.text(date) == expected)
        }
    }
}
