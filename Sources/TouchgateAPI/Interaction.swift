
/// The person at the other end of a request: where prompts and progress go, where a
/// passphrase comes from, and who confirms a change that loses data. The CLI implements
/// it over the terminal; a daemon over its socket.
///
/// Calls come from the task running the request, one at a time and in order. Questions
/// are asynchronous: a daemon waits for its client's answer without holding a thread.
public protocol Interaction: Sendable {
    /// Shows a prompt, progress or hint.
    func event(_ event: InteractionEvent)

    /// Asks for the vault passphrase. Within one request the answer is remembered, so a
    /// policy that asks twice reads it once; with `again` (after a wrong one) it is asked
    /// anew.
    /// - Throws: `CancellationError` when the person cancels; any other error when it
    ///   cannot be asked (its description is shown).
    func passphrase(prompt: String, again: Bool) async throws -> SecretBytes

    /// Asks for a new passphrase, once: the service judges its strength before
    /// ``repeatPassphrase(prompt:)`` has it typed again, so a weak one is refused before
    /// anyone types it twice.
    func newPassphrase(prompt: String) async throws -> SecretBytes

    /// Asks for the new passphrase again, to confirm it; where nobody types (a descriptor
    /// gives one line), the one ``newPassphrase(prompt:)`` just gave.
    func repeatPassphrase(prompt: String) async throws -> SecretBytes

    /// Whether a wrong or refused passphrase can be asked for again: a person at a
    /// terminal can retype it; a descriptor gives one line.
    var canAskAgain: Bool { get }

    /// Asks the person to confirm a change that loses data; `details` lists what (item
    /// names, to be shown escaped). Returns false when declined or when nobody can be
    /// asked (no terminal, and the caller did not confirm in advance).
    func confirm(_ question: String, details: [String]) async throws -> Bool
}

extension Interaction {
    /// The vault passphrase, remembered within the request.
    public func passphrase(prompt: String) async throws -> SecretBytes {
        try await passphrase(prompt: prompt, again: false)
    }
}
