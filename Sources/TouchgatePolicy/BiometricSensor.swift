/// A fingerprint reader as the policy core sees it: one verification per call.
///
/// FingerprintKit's adapter (in the CLI) implements it over a real or virtual reader;
/// `ScriptedSensor` (TouchgatePolicyTesting) implements it for tests. The policy core calls it only when a
/// fresh touch is needed and the reader is not locked out, and restarts it after
/// ``SensorError/retry(_:)`` until ``PolicyConfiguration/maximumScans`` scans were made.
public protocol BiometricSensor: Sendable {
    /// Captures one finger and matches it against the enrolled prints.
    ///
    /// - Parameter prompt: what to show the user (e.g. "Touch the reader to read
    ///   'github-token'"); never contains a secret.
    /// - Returns: ``SensorOutcome/match(_:)`` with the enrolled print that matched, or
    ///   ``SensorOutcome/noMatch`` for a good capture of a finger that is not enrolled
    ///   (the only outcome counted as a failed attempt).
    /// - Throws: ``SensorError``; task cancellation must surface as
    ///   ``SensorError/cancelled``.
    func identify(prompt: String) async throws(SensorError) -> SensorOutcome
}

/// The result of one good capture.
public enum SensorOutcome: Hashable, Sendable {
    /// The finger matched this enrolled print.
    case match(EnrolledPrintID)
    /// The capture was good and matched no enrolled print.
    case noMatch
}
