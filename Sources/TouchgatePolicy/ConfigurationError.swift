/// Why a ``PolicyConfiguration`` value was rejected.
public enum ConfigurationError: Error, Hashable, Sendable {
    /// The lockout threshold is outside `1...20`.
    case lockoutThresholdOutOfRange(Int)
    /// The lockout duration is zero, negative or longer than a day.
    case lockoutDurationOutOfRange(Duration)
    /// A session or idle timeout is negative.
    case negativeTimeout(Duration)
    /// The passphrase-only threshold is below the lockout threshold or above 100.
    case passphraseOnlyThresholdOutOfRange(Int)
    /// The passphrase maximum age is zero, negative or longer than 72 hours.
    case passphraseMaxAgeOutOfRange(Duration)
    /// The scan budget (``PolicyConfiguration/maximumScans``) is outside `1...10`.
    case maximumScansOutOfRange(Int)
}

extension ConfigurationError: CustomStringConvertible {
    /// What is wrong and which values are accepted.
    public var description: String {
        switch self {
        case .lockoutThresholdOutOfRange(let value):
            "lockout threshold \(value) is out of range (1 to 20 failed attempts)"
        case .lockoutDurationOutOfRange(let value):
            "lockout duration \(value) is out of range (more than zero, at most 24 hours)"
        case .negativeTimeout(let value):
            "timeout \(value) is negative"
        case .passphraseOnlyThresholdOutOfRange(let value):
            "passphrase-only threshold \(value) is out of range (at least the lockout threshold, at most 100)"
        case .passphraseMaxAgeOutOfRange(let value):
            "passphrase maximum age \(value) is out of range (more than zero, at most 72 hours)"
        case .maximumScansOutOfRange(let value):
            "scan budget \(value) is out of range (1 to 10 scans per operation)"
        }
    }
}
