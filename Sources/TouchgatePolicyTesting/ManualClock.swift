public import FoundationEssentials
import Synchronization
public import TouchgatePolicy

/// A clock that moves only when a test tells it to.
///
/// ``advance(by:)`` moves wall and boot time together (as real time passing, suspend
/// included); ``setWallTime(_:)`` jumps only the wall clock, as a user changing the
/// system time; ``reboot(bootID:uptime:)`` starts a new boot with boot time near zero.
/// Safe to share between tasks.
public final class ManualClock: PolicyClock, Sendable {
    // Every reading, read and written only under its lock.
    private let readings: Mutex<Readings>

    private struct Readings {
        var wall: Date
        var boot: Duration
        var boots: BootID
    }

    /// Creates a clock at the given readings.
    public init(
        wallTime: Date = Date(timeIntervalSince1970: 1_750_000_000),
        bootTime: Duration = .seconds(60),
        bootID: BootID = "boot-1"
    ) {
        readings = Mutex(Readings(wall: wallTime, boot: bootTime, boots: bootID))
    }

    /// The current wall time.
    public var wallTime: Date { readings.withLock { $0.wall } }
    /// The current boot time.
    public var bootTime: Duration { readings.withLock { $0.boot } }
    /// The current boot identifier.
    public var bootID: BootID { readings.withLock { $0.boots } }

    /// Lets `duration` pass: both wall and boot time move forward.
    public func advance(by duration: Duration) {
        readings.withLock {
            $0.boot += duration
            $0.wall += duration.timeInterval
        }
    }

    /// Sets the wall clock only, as a user changing the system time would.
    public func setWallTime(_ date: Date) {
        readings.withLock { $0.wall = date }
    }

    /// Starts a new boot: a new identifier, boot time restarting at `uptime`.
    /// Wall time is left alone.
    public func reboot(bootID: BootID, uptime: Duration = .seconds(10)) {
        readings.withLock {
            $0.boots = bootID
            $0.boot = uptime
        }
    }
}
