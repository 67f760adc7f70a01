/// Why access was refused: the small set of outcomes a caller switches on.
///
/// ``userMessage`` says what to do next; ``description`` adds the technical reason for
/// logs. Neither ever contains a secret, a passphrase or template data.
public enum AuthorizationError: Error, Hashable, Sendable {
    /// The finger or passphrase was wrong, or no usable capture was made.
    case authenticationFailed(AuthenticationFailure)
    /// The user or the calling task cancelled.
    case cancelled
    /// No reader is attached or it could not be opened.
    case readerUnavailable
    /// The reader was unplugged during the operation.
    case readerDisconnected
    /// The policy needs a fingerprint and none is enrolled.
    case nothingEnrolled
    /// Too many failed matches; the reader is not used until the lockout ends.
    case lockedOut(LockoutInfo)
    /// The item was bound to a set of fingers that has changed; it can never be read.
    case itemInvalidated(item: String)
    /// The passphrase must be entered first.
    case passphraseRequired(PassphraseRequirement)
    /// The policy state or audit log could not be read or written; access is denied
    /// (fail closed). The text comes from the store and holds no secret.
    case stateUnavailable(String)
}

/// Details of a failed authentication.
public enum AuthenticationFailure: Hashable, Sendable {
    /// A good capture matched no enrolled finger (counted toward lockout).
    case noMatch(attemptsBeforeLockout: Int)
    /// Every capture was of poor quality, `attempts` times (not counted).
    case poorCapture(attempts: Int)
    /// No finger was presented in time (not counted).
    case timedOut
    /// The passphrase was wrong.
    case wrongPassphrase
}

/// Details of a lockout.
public struct LockoutInfo: Hashable, Sendable {
    /// Time left on the monotonic clock, or nil when only the passphrase lifts it.
    public var remaining: Duration?
    /// Whether only the passphrase can lift the lockout.
    public var passphraseOnly: Bool

    /// Creates lockout details.
    public init(remaining: Duration?, passphraseOnly: Bool) {
        self.remaining = remaining
        self.passphraseOnly = passphraseOnly
    }
}

/// Why the passphrase is needed.
public enum PassphraseRequirement: Hashable, Sendable {
    /// Not entered since the machine booted (fingerprint-only access needs it).
    case notEnteredSinceBoot
    /// Entered longer ago than the maximum age (72 hours by default).
    case expired
    /// Enrolling or deleting a finger needs it.
    case enrollmentChange
    /// The item's policy needs it and no way to ask for it was given.
    case requiredByPolicy
}

extension AuthorizationError {
    /// One or two sentences for the user: what happened and what to do next.
    public var userMessage: String {
        switch self {
        case .authenticationFailed(.noMatch(let left)):
            // The words of `touchgate verify`'s line and of the PAM module (TerminalText.noMatch,
            // pam_touchgate.c), which ServiceRuleTests and PAMTests keep alike.
            left > 0
                ? "No match (\(left) more before a lockout). Try again with an enrolled finger."
                : "No match. Try again with an enrolled finger."
        case .authenticationFailed(.poorCapture):
            "The reader could not get a clear print. Clean the sensor, place the finger flat and centred, and try again."
        case .authenticationFailed(.timedOut):
            "No finger was detected in time. Run the command again and touch the reader when asked."
        case .authenticationFailed(.wrongPassphrase):
            "Wrong passphrase. Try again."
        case .cancelled:
            "Cancelled. Nothing was read or changed."
        case .readerUnavailable:
            "No fingerprint reader is available. Plug in the reader (or check that no other program is using it), or use the passphrase if the item allows it."
        case .readerDisconnected:
            "The fingerprint reader was unplugged. Plug it back in and try again."
        case .nothingEnrolled:
            "No fingerprint is enrolled. Run: touchgate enroll (once a vault exists it asks for the passphrase)."
        case .lockedOut(let info):
            if info.passphraseOnly {
                "Too many failed fingerprint attempts: only the passphrase lifts this lockout. Run: touchgate unlock."
            } else if let remaining = info.remaining {
                "Too many failed fingerprint attempts. Try again in \(Self.minutesText(remaining)), or lift the lockout now with the passphrase: touchgate unlock."
            } else {
                "Too many failed fingerprint attempts. Lift the lockout with the passphrase: touchgate unlock."
            }
        case .itemInvalidated(let item):
            "'\(item)' was bound to the fingers enrolled when it was stored; that set has changed, so it can no longer be read. Store it again."
        case .passphraseRequired(.notEnteredSinceBoot):
            "The passphrase has not been entered since this computer started, and a fingerprint alone opens nothing until it is. Run: touchgate unlock."
        case .passphraseRequired(.expired):
            "The passphrase was last entered more than 72 hours ago, and a fingerprint alone opens nothing until it is entered again. Run: touchgate unlock."
        case .passphraseRequired(.enrollmentChange):
            "Enrolling or removing a finger needs the passphrase."
        case .passphraseRequired(.requiredByPolicy):
            "This item needs the passphrase. Run the command where the passphrase can be entered."
        case .stateUnavailable:
            "Touchgate could not read or record its security state, so access was denied. Check that the vault is readable and the disk is not full, then try again."
        }
    }

    /// `14 min 42 s`: the time left as `touchgate status` shows it (StatusText.duration,
    /// which WordingTests keeps alike), not rounded to a "15 minutes" the clock does not show.
    static func minutesText(_ duration: Duration) -> String {
        let seconds = max(0, Int(duration.components.seconds))
        let (hours, minutes, rest) = (seconds / 3600, seconds % 3600 / 60, seconds % 60)
        if hours > 0 { return minutes > 0 ? "\(hours) h \(minutes) min" : "\(hours) h" }
        if minutes > 0 { return rest > 0 ? "\(minutes) min \(rest) s" : "\(minutes) min" }
        return "\(rest) s"
    }
}

extension AuthorizationError: CustomStringConvertible {
    /// A technical one-liner for logs and audit reasons (no secrets).
    public var description: String {
        switch self {
        case .authenticationFailed(.noMatch(let left)): "no match (\(left) before lockout)"
        case .authenticationFailed(.poorCapture(let attempts)): "poor capture after \(attempts) attempts"
        case .authenticationFailed(.timedOut): "timed out waiting for a finger"
        case .authenticationFailed(.wrongPassphrase): "wrong passphrase"
        case .cancelled: "cancelled"
        case .readerUnavailable: "reader unavailable"
        case .readerDisconnected: "reader disconnected"
        case .nothingEnrolled: "nothing enrolled"
        case .lockedOut(let info):
            info.passphraseOnly
                ? "locked out until passphrase entry"
                : "locked out (\(info.remaining.map { "\($0.components.seconds) s" } ?? "?") remaining)"
        case .itemInvalidated(let item): "item '\(item)' invalidated by enrollment change"
        case .passphraseRequired(let why): "passphrase required (\(why))"
        case .stateUnavailable(let detail): "policy state unavailable: \(detail)"
        }
    }
}
