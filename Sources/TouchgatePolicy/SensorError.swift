/// Why a reader produced no verdict. None of these counts as a failed attempt.
public enum SensorError: Error, Hashable, Sendable {
    /// The capture was poor (too short, off centre, finger removed too early); try again.
    case retry(RetryReason)
    /// No finger was presented in time.
    case timeout
    /// The user or the calling task cancelled.
    case cancelled
    /// No usable reader: none attached, busy, or it failed to open.
    case unavailable
    /// The reader was unplugged during the operation.
    case disconnected

    /// Why a capture must be repeated (mirrors libfprint's retry codes).
    public enum RetryReason: Hashable, Sendable {
        /// Unspecified poor capture.
        case general
        /// The swipe was too short.
        case tooShort
        /// The finger was not centred.
        case centerFinger
        /// The finger must be lifted and placed again.
        case removeFinger
    }
}
