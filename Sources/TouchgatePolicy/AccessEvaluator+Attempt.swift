/// What one authorization has proven so far, and what it may use to prove more.
struct Attempt {
    /// What is being authorized, for prompts: e.g. `read 'github-token'`.
    var action: String
    /// What is enrolled, or nil when fingerprints play no part (unlock, enrollment).
    var enrollment: EnrollmentStatus?
    /// The reader, if any.
    var sensor: (any BiometricSensor)?
    /// The passphrase prompt, if any.
    var passphrase: (any PassphraseVerifier)?
    /// The print that matched during this attempt.
    var matchedPrint: EnrolledPrintID?
    /// Whether the passphrase was verified during this attempt.
    var passphraseVerified = false
    /// How many times the user was actually asked (reader or passphrase).
    var interactions = 0

    /// The factors proven.
    var factors: Set<AuthenticationFactor> {
        var result: Set<AuthenticationFactor> = []
        if matchedPrint != nil { result.insert(.biometry) }
        if passphraseVerified { result.insert(.passphrase) }
        return result
    }

    /// Why the attempt succeeded, in words.
    var reasonText: String {
        var parts: [String] = []
        if let matchedPrint { parts.append("fingerprint matched print \(matchedPrint)") }
        if passphraseVerified { parts.append("passphrase verified") }
        return parts.joined(separator: ", ")
    }
}

extension AuthorizationError {
    /// How a refusal is recorded: `failure` for a wrong finger or passphrase, `error`
    /// when no verdict was reached, `denied` when policy refused before asking.
    var auditOutcome: PolicyAuditEvent.Outcome {
        switch self {
        case .authenticationFailed(.noMatch), .authenticationFailed(.wrongPassphrase): .failure
        case .authenticationFailed(.poorCapture), .authenticationFailed(.timedOut), .cancelled,
            .readerUnavailable, .readerDisconnected, .stateUnavailable:
            .error
        case .lockedOut, .itemInvalidated, .passphraseRequired, .nothingEnrolled: .denied
        }
    }
}
