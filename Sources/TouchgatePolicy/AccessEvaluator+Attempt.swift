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
    /// Why an `or` fell back to its other branch, said in the next prompt (e.g. "the
    /// fingerprint was not accepted (locked out)"), so a fallback is never silent.
    var fallbackReason: String?
    /// How many times the user was actually asked (reader or passphrase).
    var interactions = 0
    /// What a fingerprint proven here leads to; decides the passphrase-freshness rule
    /// and how outcomes are audited.
    var purpose = Purpose.release
    /// A check whose match lets key material be used afterwards (a passkey's verification,
    /// whose ticket lets the vault sign): the passphrase-freshness rule of a release applies,
    /// its refusal recorded as a check's.
    var guardsKeyMaterial = false

    /// What a fingerprint proven in an attempt leads to.
    enum Purpose {
        /// Releases key material or changes state (item access, unlock): a fingerprint
        /// alone needs a passphrase entered this boot and within the maximum age, and the
        /// operation writes its own audit record for refusals before the reader is asked.
        case release
        /// A bare check (`verify`, `identify`) that releases nothing: no passphrase
        /// freshness rule, no session, and every outcome, refusals before the reader
        /// included, is an `auth.attempt` record whose reason names ``Attempt/action``.
        case check
    }

    /// The factors proven.
    var factors: Set<AuthenticationFactor> {
        var result: Set<AuthenticationFactor> = []
        if matchedPrint != nil { result.insert(.biometry) }
        if passphraseVerified { result.insert(.passphrase) }
        return result
    }

    /// An audit reason for a fingerprint outcome; a bare check names its action, since
    /// no other record says what the touch was for.
    func auditReason(_ text: String) -> String {
        purpose == .check ? "\(action): \(text)" : text
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
