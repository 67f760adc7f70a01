/// Asks the user for the vault passphrase and checks it; the vault implements it.
///
/// The passphrase never passes through the policy core: the verifier prompts, derives,
/// compares, zeroes, and returns only the verdict.
public protocol PassphraseVerifier: Sendable {
    /// Prompts for the passphrase and reports whether it is correct.
    ///
    /// - Parameter prompt: what to show the user; never contains a secret.
    /// - Throws: ``PassphraseEntryError`` when no verdict could be reached.
    func verifyPassphrase(prompt: String) async throws(PassphraseEntryError) -> Bool
}

/// Why no passphrase verdict was reached.
public enum PassphraseEntryError: Error, Hashable, Sendable {
    /// The user declined to enter it (or the task was cancelled).
    case cancelled
    /// It cannot be asked here (no terminal, no vault yet).
    case unavailable
}
