import FoundationEssentials
import Synchronization
import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

/// Asking for the vault passphrase and checking it: up to three tries where the person
/// can retype it (like sudo and cryptsetup), one from a descriptor; Argon2id runs off the
/// cooperative pool and is abandoned at once when the request is cancelled (Ctrl-C), so a
/// cancelled unlock never leaves a key behind.
enum PassphraseEntry {
    /// Tries at a terminal.
    static let maximumTries = 3

    /// Asks until the passphrase opens `vault`'s key, calling `wrong` with the try number
    /// after each wrong one but the last (the caller records them).
    /// - Returns: the passphrase and the key it opened.
    /// - Throws: `VaultError.wrongPassphrase` after the last wrong try, `CancellationError`.
    static func open(_ vault: Vault, interaction: any Interaction, prompt: String,
                     wrong: (Int) throws -> Void = { _ in }) async throws -> (SecretBytes, VaultKey) {
        var again = false
        var tries = 0
        while true {
            tries += 1
            interaction.event(InteractionEvent(.passphraseNeeded, prompt))
            let passphrase = try await interaction.passphrase(prompt: prompt + ": ", again: again)
            do {
                let key = try await offThread { try vault.unlock(passphrase: passphrase) }
                return (passphrase, key)
            } catch VaultError.wrongPassphrase where tries < maximumTries && interaction.canAskAgain {
                try wrong(tries)
                interaction.notice("wrong passphrase; try again (\(maximumTries - tries) more)")
                again = true
            }
        }
    }

    /// A new passphrase that libpwquality does not refuse, asked again (on a terminal, up
    /// to three times) after a mismatch or a refusal; a weak one is accepted with a warning.
    /// - Throws: ``ServiceError`` `weak-passphrase` or the interaction's mismatch error
    ///   after the last try.
    static func new(_ interaction: any Interaction, prompt: String, user: String) async throws -> SecretBytes {
        var tries = 0
        while true {
            tries += 1
            let last = tries >= maximumTries || !interaction.canAskAgain
            let passphrase: SecretBytes
            do {
                passphrase = try await interaction.newPassphrase(prompt: prompt)
            } catch let error as ServiceError where error.code == .passphraseInput && !last {
                interaction.notice("\(error.message); try again")
                continue
            }
            // Judged before it is typed again: a refused one is not asked for twice.
            var weakness: String?
            switch PassphraseStrength.assess(passphrase, user: user) {
            case .strong:
                break
            case .weak(let why):
                weakness = why
            case .uncheckable(let why):
                // Every passphrase would fail the same way: asking again helps nobody.
                throw ServiceError(.weakPassphrase, "the new passphrase cannot be judged: \(why); install cracklib-runtime "
                                   + "(sudo apt-get install cracklib-runtime) and try again; nothing was changed")
            case .rejected(let why):
                let message = "passphrase refused: \(why). It is all that protects your secrets at rest: use a few "
                    + "unrelated words or 12 or more mixed characters"
                if last { throw ServiceError(.weakPassphrase, message + "; nothing was changed") }
                interaction.notice(message + "; try again")
                continue
            }
            let again: SecretBytes
            do {
                again = try await interaction.repeatPassphrase(prompt: "Repeat it: ")
            } catch let error as ServiceError where error.code == .passphraseInput && !last {
                interaction.notice("\(error.message); try again")
                continue
            }
            guard passphrase.constantTimeEquals(again) else {
                if last { throw PassphraseInputError.mismatch.serviceError }
                interaction.notice("the two passphrases differ; try again")
                continue
            }
            if let weakness {
                interaction.notice("this passphrase is weak (\(weakness)); it is all that protects your secrets "
                                   + "at rest, so consider a longer one (touchgate passphrase change)")
            }
            return passphrase
        }
    }

    /// Runs slow, blocking work (Argon2id) on a thread of its own and returns its result,
    /// or throws `CancellationError` as soon as the calling task is cancelled; the
    /// abandoned result is dropped (secret bytes are zeroed when released).
    static func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let race = Race<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                SystemThread.detach(name: nil) { race.finish(Result { try body() }) }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

/// The passphrase this request already verified (for recording the entry with the policy core).
struct AlreadyVerified: PassphraseVerifier {
    func verifyPassphrase(prompt: String) async throws(PassphraseEntryError) -> Bool { true }
}

/// Whichever comes first, the work or the cancellation, resumes the continuation once.
private final class Race<T: Sendable>: Sendable {
    // Every field, read and written under their lock.
    private let state = Mutex<State>(State())

    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var done = false
    }

    func start(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func finish(_ result: Result<T, any Error>) {
        let waiting: CheckedContinuation<T, any Error>? = state.withLock { state in
            guard !state.done else { return nil }
            state.done = true
            if let continuation = state.continuation { state.continuation = nil; return continuation }
            state.early = result
            return nil
        }
        waiting?.resume(with: result)
    }
}
