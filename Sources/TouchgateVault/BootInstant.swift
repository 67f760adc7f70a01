import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A point in time on the monotonic boot clock: which boot, and how long after it.
///
/// `CLOCK_BOOTTIME` counts suspend and is not moved by changing the wall clock, so
/// ages computed from it cannot be shortened by setting the date back. Instants from
/// different boots (`/proc/sys/kernel/random/boot_id`) are not comparable.
public struct BootInstant: Sendable, Hashable, Codable {
    /// The kernel's random id for the current boot.
    public var bootID: String
    /// Seconds since boot, `CLOCK_BOOTTIME`.
    public var secondsSinceBoot: Double

    /// An instant (tests build them; production code uses ``now()``).
    public init(bootID: String, secondsSinceBoot: Double) {
        self.bootID = bootID
        self.secondsSinceBoot = secondsSinceBoot
    }

    /// The current boot id and `CLOCK_BOOTTIME`.
    /// - Throws: ``VaultError/system(operation:code:)`` if either cannot be read.
    public static func now() throws -> BootInstant {
        let id: String
        do {
            id = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw VaultError.system(operation: "read the boot id from /proc/sys/kernel/random/boot_id", code: ENOENT)
        }
        var time = timespec()
        guard clock_gettime(CLOCK_BOOTTIME, &time) == 0 else {
            throw VaultError.system(operation: "read CLOCK_BOOTTIME", code: errno)
        }
        return BootInstant(bootID: id, secondsSinceBoot: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    }

    /// Seconds from `self` to `later`, or `nil` if they belong to different boots.
    public func seconds(until later: BootInstant) -> Double? {
        bootID == later.bootID ? later.secondsSinceBoot - secondsSinceBoot : nil
    }

    /// Whether `self` is in this boot and no more than `maximumAge` before `now`
    /// (e.g. "passphrase entered since boot and within 72 hours").
    public func isRecent(now: BootInstant, maximumAge: Duration) -> Bool {
        guard let elapsed = seconds(until: now) else { return false }
        return elapsed >= 0 && elapsed <= maximumAge.seconds
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
