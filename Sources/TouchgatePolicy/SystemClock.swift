public import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real clock: `Date()`, `clock_gettime(CLOCK_BOOTTIME)` and the kernel's boot id.
///
/// The boot id is read once per process (or, for tests, at initialization) from
/// `/proc/sys/kernel/random/boot_id`. If that file cannot be read the clock uses a fresh
/// random identifier, so every process looks like a new boot: lockouts restart at full
/// length and the passphrase is asked again. That is the conservative failure.
public struct SystemClock: PolicyClock {
    /// The boot identifier read at initialization.
    public let bootID: BootID

    /// Where the kernel publishes the id of the current boot.
    public static let kernelBootIDPath = "/proc/sys/kernel/random/boot_id"

    /// Reads the boot identifier from the kernel (once per process: a process does not
    /// outlive its boot, and touchgated makes a clock for every request).
    public init() {
        bootID = Self.currentBootID ?? BootID("unknown-\(UUID().uuidString.lowercased())")
    }

    /// The kernel's boot id, read at first use and kept for the process (nil when unreadable);
    /// the clock and the vault's audit records both take it from here.
    public static let currentBootID = readBootID()

    /// Reads the boot identifier from `bootIDPath` (tests point it at a file they own).
    public init(bootIDPath: String) {
        bootID = Self.readBootID(path: bootIDPath) ?? BootID("unknown-\(UUID().uuidString.lowercased())")
    }

    /// Reads the boot identifier in `path` (white space trimmed); `nil` when the file
    /// cannot be read or holds nothing. The one place that reads the boot id: the clock
    /// and the vault's audit records each choose their own fallback.
    public static func readBootID(path: String = kernelBootIDPath) -> BootID? {
        guard let file = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        // White space trimmed scalar by scalar (FoundationEssentials has no `trimmingCharacters`).
        let scalars = file.unicodeScalars
        let isSpace = { (scalar: Unicode.Scalar) in scalar.properties.isWhitespace || scalar == "\u{200B}" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
              let last = scalars.lastIndex(where: { !isSpace($0) }) else { return nil }
        return BootID(String(scalars[first...last]))
    }

    /// The current wall-clock time.
    public var wallTime: Date { Date() }

    /// Time since boot, suspend included.
    public var bootTime: Duration { Self.readBootTime() }

    /// Reads `CLOCK_BOOTTIME` now: time since boot, suspend included. The one place that
    /// reads the boot clock, for callers that need no boot id (the vault's keyring session).
    public static func readBootTime() -> Duration {
        var spec = timespec()
        #if os(Linux)
        let status = clock_gettime(CLOCK_BOOTTIME, &spec)
        #else
        // Darwin's CLOCK_MONOTONIC also counts time asleep.
        let status = clock_gettime(CLOCK_MONOTONIC, &spec)
        #endif
        // CLOCK_BOOTTIME exists on every supported kernel; failure is a broken system.
        precondition(status == 0, "clock_gettime(CLOCK_BOOTTIME) failed")
        return .seconds(Int64(spec.tv_sec)) + .nanoseconds(Int64(spec.tv_nsec))
    }
}
