public import FoundationEssentials

extension Duration {
    /// The duration in seconds as a `TimeInterval` (a `Double`): whole seconds plus the
    /// fraction, to the precision a `Double` holds.
    ///
    /// The one conversion from `Duration` to seconds: the manual clock's wall time, the
    /// vault session's keyring timeouts and the audit trail's boot time all use it.
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
