public import FoundationEssentials

/// The source of time for every policy decision; injected so tests control it.
///
/// Two readings: wall time, only for audit records and display, and boot time
/// (monotonic, counting suspend), for every duration that matters (lockout, session
/// reuse, idle timeout, passphrase age). Implementations must be safe to call from any
/// task. See ``SystemClock``, and `ManualClock` in TouchgatePolicyTesting.
public protocol PolicyClock: Sendable {
    /// The current wall-clock time (may jump when the user changes the clock).
    var wallTime: Date { get }
    /// Time since boot including suspend (Linux `CLOCK_BOOTTIME`).
    var bootTime: Duration { get }
    /// The current boot's identifier.
    var bootID: BootID { get }
}

extension PolicyClock {
    /// The current boot time tagged with the boot identifier.
    public var monotonicNow: MonotonicInstant {
        MonotonicInstant(bootID: bootID, sinceBoot: bootTime)
    }

    /// Both readings, taken together.
    public func reading() -> ClockReading {
        ClockReading(wall: wallTime, monotonic: monotonicNow)
    }
}

/// One reading of a ``PolicyClock``: wall time and boot time together.
public struct ClockReading: Hashable, Sendable, Codable {
    /// Wall-clock time, for audit records and display only.
    public var wall: Date
    /// Monotonic boot time, for every duration check.
    public var monotonic: MonotonicInstant

    /// Creates a reading.
    public init(wall: Date, monotonic: MonotonicInstant) {
        self.wall = wall
        self.monotonic = monotonic
    }
}
