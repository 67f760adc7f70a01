public import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// A moment as a person reads it in a status line: `29 Nov 2026 at 04:56`, local time.
///
/// Formatted with the C library rather than Foundation's date styles: those load ICU's
/// locale data, which measured about 4 ms of the 18 ms a `touchgate status` took, for one
/// date. The words are English, like every other message.
public enum ShownTime {
    public static func text(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return date.formatted(.iso8601) }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let month = months[Int(parts.tm_mon) % 12]
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_mday) \(month) \(parts.tm_year + 1900) at \(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min))"
    }
}
