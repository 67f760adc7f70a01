/// Identifies one boot of the machine (Linux: `/proc/sys/kernel/random/boot_id`).
///
/// The monotonic boot-time clock restarts at zero on every boot, so a
/// ``MonotonicInstant`` is only comparable with another of the same boot.
public struct BootID: StringIdentifier {
    /// The identifier as read from the kernel (a UUID on Linux).
    public let rawValue: String

    /// Wraps an identifier read from the kernel or from storage.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }
}
