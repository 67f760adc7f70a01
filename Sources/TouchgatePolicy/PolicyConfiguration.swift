/// Tunable limits of the policy core, validated on creation.
///
/// Defaults follow the product's source documents: 3 failures lock the reader for
/// 15 minutes; 20 failures since the last passphrase entry leave only the passphrase;
/// a touch may be reused for 5 minutes (never more: Apple's maximum), ended earlier by
/// 2 idle minutes; the passphrase must have been entered this boot and within 72 hours
/// for a fingerprint alone to open anything; every operation that waits for a finger
/// takes at most 5 scans.
///
/// The idle timeout defaults below the session timeout on purpose: the session timeout
/// counts from the last touch, the idle timeout from the last use, so an idle timeout
/// equal to the session timeout could never fire first.
public struct PolicyConfiguration: Hashable, Sendable {
    /// The longest session (reuse) timeout; longer requests are clamped to it.
    public static let maximumSessionTimeout: Duration = .seconds(5 * 60)
    /// The accepted range of ``lockoutThreshold``.
    public static let lockoutThresholdRange: ClosedRange<Int> = 1...20
    /// The longest accepted ``lockoutDuration``.
    public static let maximumLockoutDuration: Duration = .seconds(24 * 60 * 60)
    /// The largest accepted ``passphraseOnlyThreshold``.
    public static let maximumPassphraseOnlyThreshold = 100
    /// The longest accepted ``passphraseMaxAge``.
    public static let maximumPassphraseAge: Duration = .seconds(72 * 60 * 60)
    /// The accepted range of ``maximumScans``.
    public static let scanRange: ClosedRange<Int> = 1...10

    /// Consecutive failed matches that start a timed lockout.
    public let lockoutThreshold: Int
    /// How long a timed lockout lasts, on the monotonic clock.
    public let lockoutDuration: Duration
    /// How long after a touch (or passphrase) it may be reused; at most 5 minutes, zero
    /// disables reuse.
    public let sessionTimeout: Duration
    /// How long without use ends a session; at most ``sessionTimeout``.
    public let idleTimeout: Duration
    /// Failed matches since the last passphrase entry after which only the passphrase
    /// lifts the lockout.
    public let passphraseOnlyThreshold: Int
    /// How long a passphrase entry allows fingerprint-only access.
    public let passphraseMaxAge: Duration
    /// The most scans one operation takes while it waits for a finger: the first scan
    /// plus the restarts after poor-quality captures (``SensorError/retry(_:)``). When
    /// every one of them is poor the operation ends with
    /// ``AuthenticationFailure/poorCapture(attempts:)``, which is not counted toward
    /// lockout. The one budget for item access and bare checks (verify, identify) alike;
    /// adapters that drive a reader themselves should use the same figure.
    public let maximumScans: Int

    /// The defaults described above.
    public static let standard = try! PolicyConfiguration()

    /// Creates a configuration.
    ///
    /// A session timeout above 5 minutes is clamped to 5 minutes, and an idle timeout
    /// above the session timeout is clamped to it; everything else out of range throws.
    /// - Throws: ``ConfigurationError`` naming the first invalid value.
    public init(
        lockoutThreshold: Int = 3,
        lockoutDuration: Duration = .seconds(15 * 60),
        sessionTimeout: Duration = .seconds(5 * 60),
        idleTimeout: Duration = .seconds(2 * 60),
        passphraseOnlyThreshold: Int = 20,
        passphraseMaxAge: Duration = .seconds(72 * 60 * 60),
        maximumScans: Int = 5
    ) throws(ConfigurationError) {
        guard Self.lockoutThresholdRange.contains(lockoutThreshold) else {
            throw .lockoutThresholdOutOfRange(lockoutThreshold)
        }
        guard lockoutDuration > .zero, lockoutDuration <= Self.maximumLockoutDuration else {
            throw .lockoutDurationOutOfRange(lockoutDuration)
        }
        guard sessionTimeout >= .zero else { throw .negativeTimeout(sessionTimeout) }
        guard idleTimeout >= .zero else { throw .negativeTimeout(idleTimeout) }
        guard
            passphraseOnlyThreshold >= lockoutThreshold,
            passphraseOnlyThreshold <= Self.maximumPassphraseOnlyThreshold
        else {
            throw .passphraseOnlyThresholdOutOfRange(passphraseOnlyThreshold)
        }
        guard passphraseMaxAge > .zero, passphraseMaxAge <= Self.maximumPassphraseAge else {
            throw .passphraseMaxAgeOutOfRange(passphraseMaxAge)
        }
        guard Self.scanRange.contains(maximumScans) else {
            throw .maximumScansOutOfRange(maximumScans)
        }
        let session = min(sessionTimeout, Self.maximumSessionTimeout)
        self.lockoutThreshold = lockoutThreshold
        self.lockoutDuration = lockoutDuration
        self.sessionTimeout = session
        self.idleTimeout = min(idleTimeout, session)
        self.passphraseOnlyThreshold = passphraseOnlyThreshold
        self.passphraseMaxAge = passphraseMaxAge
        self.maximumScans = maximumScans
    }
}
