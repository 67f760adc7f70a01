import Synchronization
public import TouchgatePolicy

/// A mock passphrase prompt that plays back a script of verdicts, for tests.
///
/// Each call consumes the next verdict and is counted; when the script runs out it
/// repeats `then` if given, else throws ``PassphraseEntryError/unavailable``.
public final class ScriptedPassphraseVerifier: PassphraseVerifier, Sendable {
    /// One scripted answer: a verdict or an error.
    public typealias Step = Result<Bool, PassphraseEntryError>

    private let steps: [Step]
    private let fallback: Step?
    // The next step to play and the calls so far, touched only under their lock.
    private let progress = Mutex<(nextIndex: Int, calls: Int)>((0, 0))

    /// Creates a verifier that answers with `script` in order, then with `then` forever.
    public init(_ script: [Step], then fallback: Step? = nil) {
        self.steps = script
        self.fallback = fallback
    }

    /// A verifier that always accepts.
    public static func accepting() -> ScriptedPassphraseVerifier {
        ScriptedPassphraseVerifier([], then: .success(true))
    }

    /// A verifier that always rejects.
    public static func rejecting() -> ScriptedPassphraseVerifier {
        ScriptedPassphraseVerifier([], then: .success(false))
    }

    /// How many times the passphrase was asked.
    public var callCount: Int { progress.withLock { $0.calls } }

    /// Plays the next verdict.
    public func verifyPassphrase(prompt: String) async throws(PassphraseEntryError) -> Bool {
        let step: Step = progress.withLock { progress in
            progress.calls += 1
            if progress.nextIndex < steps.count {
                defer { progress.nextIndex += 1 }
                return steps[progress.nextIndex]
            }
            return fallback ?? .failure(.unavailable)
        }
        return try step.get()
    }
}
