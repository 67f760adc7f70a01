/// A reading of the boot-time clock (Linux `CLOCK_BOOTTIME`): time since boot,
/// counting time spent suspended, tagged with the boot it belongs to.
///
/// Unlike wall time it cannot be set by the user, so lockouts and timeouts measured with
/// it cannot be shortened by changing the system clock.
public struct MonotonicInstant: Hashable, Sendable, Codable {
    /// The boot this reading belongs to.
    public var bootID: BootID
    /// Time elapsed since that boot, suspend included.
    public var sinceBoot: Duration

    /// Creates a reading.
    public init(bootID: BootID, sinceBoot: Duration) {
        self.bootID = bootID
        self.sinceBoot = sinceBoot
    }

    /// Time from `earlier` to `self`, or nil when the two belong to different boots.
    ///
    /// A negative result (a reading "from the future" of the same boot, only possible
    /// with tampered state) is returned as is; callers treat it conservatively.
    public func elapsed(since earlier: MonotonicInstant) -> Duration? {
        guard earlier.bootID == bootID else { return nil }
        return sinceBoot - earlier.sinceBoot
    }

    /// The instant `duration` later on the same boot.
    public func advanced(by duration: Duration) -> MonotonicInstant {
        MonotonicInstant(bootID: bootID, sinceBoot: sinceBoot + duration)
    }
}
