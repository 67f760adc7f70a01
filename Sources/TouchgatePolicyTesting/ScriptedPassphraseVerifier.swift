import Foundation
public import TouchgatePolicy

/// A mock passphrase prompt that plays back a script of verdicts, for tests.
///
/// Each call consumes the next verdict and is counted; when the script runs out it
/// repeats `then` if given, else throws ``PassphraseEntryError/unavailable``.
public final class ScriptedPassphraseVerifier: PassphraseVerifier, @unchecked Sendable {
    // @unchecked Sendable: `steps`, `nextIndex` and `calls` are touched only under `lock`.
    /// One scripted answer: a verdict or an error.
    public typealias Step = Result<Bool, PassphraseEntryError>

    private let lock = NSLock()
    private let steps: [Step]
    private let fallback: Step?
    private var nextIndex = 0
    private var calls = 0

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
    public var callCount: Int { lock.withLock { calls } }

    /// Plays the next verdict.
    public func verifyPassphrase(prompt: String) async throws(PassphraseEntryError) -> Bool {
        let step: Step = lock.withLock {
            calls += 1
            if nextIndex < steps.count {
                defer { nextIndex += 1 }
                return steps[nextIndex]
            }
            return fallback ?? .failure(.unavailable)
        }
        return try step.get()
    }
}
