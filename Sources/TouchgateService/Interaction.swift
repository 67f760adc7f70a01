import TouchgateVault
import TouchgateWire

/// Secret bytes in guarded memory, as the service takes and returns them (passphrases,
/// item values). Zeroed when released; never printed.
public typealias SecretBytes = SecureBytes

/// The person at the other end of a request: where prompts and progress go, and where
/// a passphrase comes from. The CLI implements it over the terminal; a daemon over its
/// socket.
///
/// Calls come from the task running the request, one at a time and in order.
public protocol Interaction: Sendable {
    /// Shows a prompt, progress or hint.
    func event(_ event: InteractionEvent)

    /// Asks for the vault passphrase, once per request: a second call in the same
    /// request returns the same answer.
    /// - Throws: `CancellationError` when the person cancels; any other error when it
    ///   cannot be asked (its description is shown).
    func passphrase(prompt: String) throws -> SecretBytes

    /// Asks for a new passphrase (on a terminal: twice, compared).
    func newPassphrase(prompt: String) throws -> SecretBytes
}
