import TouchgateAPI
import TouchgateTerminal

/// A helper's interaction that also tells the requester's terminal what it waits for: ssh-agent
/// runs `touchgate askpass` with no terminal (for `ssh-add -c` keys, while `ssh` or `git`
/// waits for a signature), so its standard error reaches nobody, and where no notification
/// server runs the person at `ssh` saw a blank screen while the reader waited.
///
/// Everything else (passphrases, confirmations) is the terminal interaction's.
struct RequesterInteraction: Interaction {
    let base: TerminalInteraction
    /// Where the person who asked reads; nil when it cannot be told (``RequesterTerminal/forHelper(runBy:)``).
    let terminal: RequesterTerminal?
    /// Who speaks on that terminal, which is another program's (`touchgate askpass`).
    let speaker: String

    func event(_ event: InteractionEvent) {
        base.event(event)
        if let line = TerminalText.line(for: event.event, message: event.message) {
            tell(line.drop { $0 == " " }.description)
        }
    }

    /// Shows `message` on the requester's terminal only.
    func tell(_ message: String) {
        terminal?.tell("\(speaker): \(message)")
    }

    /// Runs `body` and tells the requester's terminal how it ended: `done` when it succeeded
    /// (its word first: `touched: …`), else whether the finger was refused, the wait timed
    /// out or it failed otherwise.
    func tellingOutcome<T: Sendable>(done: String, _ body: () async throws -> T) async throws -> T {
        do {
            let value = try await body()
            tell(done)
            return value
        } catch let error as ServiceError {
            tell(Self.outcome(of: error))
            throw error
        } catch {
            tell(error is CancellationError ? "cancelled" : "failed: \(error)")
            throw error
        }
    }

    /// The requester's words for how a wait for a finger ended in `error`.
    static func outcome(of error: ServiceError) -> String {
        switch error.code {
        case .noMatch, .lockedOut, .declined, .forbidden: "refused: \(error.message)"
        case .timedOut: "timed out: \(error.message)"
        case .cancelled: "cancelled: \(error.message)"
        default: "failed: \(error.message)"
        }
    }

    func passphrase(prompt: String, again: Bool) async throws -> SecretBytes {
        try base.passphrase(prompt: prompt, again: again)
    }

    func newPassphrase(prompt: String) async throws -> SecretBytes {
        try base.newPassphrase(prompt: prompt)
    }

    func repeatPassphrase(prompt: String) async throws -> SecretBytes {
        try base.repeatPassphrase(prompt: prompt)
    }

    var canAskAgain: Bool { base.canAskAgain }

    func confirm(_ question: String, details: [String]) async throws -> Bool {
        try base.confirm(question, details: details)
    }
}
