public import Foundation
public import TouchgatePolicy

/// A clock that moves only when a test tells it to.
///
/// ``advance(by:)`` moves wall and boot time together (as real time passing, suspend
/// included); ``setWallTime(_:)`` jumps only the wall clock, as a user changing the
/// system time; ``reboot(bootID:uptime:)`` starts a new boot with boot time near zero.
/// Safe to share between tasks.
public final class ManualClock: PolicyClock, @unchecked Sendable {
    // @unchecked Sendable: every stored property is read and written only under `lock`.
    private let lock = NSLock()
    private var wall: Date
    private var boot: Duration
    private var boots: BootID

    /// Creates a clock at the given readings.
    public init(
        wallTime: Date = Date(timeIntervalSince1970: 1_750_000_000),
        bootTime: Duration = .seconds(60),
        bootID: BootID = "boot-1"
    ) {
        wall = wallTime
        boot = bootTime
        boots = bootID
    }

    /// The current wall time.
    public var wallTime: Date { lock.withLock { wall } }
    /// The current boot time.
    public var bootTime: Duration { lock.withLock { boot } }
    /// The current boot identifier.
    public var bootID: BootID { lock.withLock { boots } }

    /// Lets `duration` pass: both wall and boot time move forward.
    public func advance(by duration: Duration) {
        lock.withLock {
            boot += duration
            wall += duration.timeInterval
        }
    }

    /// Sets the wall clock only, as a user changing the system time would.
    public func setWallTime(_ date: Date) {
        lock.withLock { wall = date }
    }

    /// Starts a new boot: a new identifier, boot time restarting at `uptime`.
    /// Wall time is left alone.
    public func reboot(bootID: BootID, uptime: Duration = .seconds(10)) {
        lock.withLock {
            boots = bootID
            boot = uptime
        }
    }
}
