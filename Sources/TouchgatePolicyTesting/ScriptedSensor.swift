import Synchronization
public import TouchgatePolicy

/// A mock reader that plays back a script of outcomes, for tests in any target.
///
/// Each ``identify(prompt:)`` call consumes the next step and is counted, so a test can
/// assert how often the reader was asked (including "not at all" during a lockout). When
/// the script runs out, the sensor repeats `then` if given, else throws
/// ``SensorError/unavailable``. Safe to share between tasks.
public final class ScriptedSensor: BiometricSensor, Sendable {
    /// One scripted answer: an outcome or an error.
    public typealias Step = Result<SensorOutcome, SensorError>

    private let steps: [Step]
    private let fallback: Step?
    // The next step to play, the calls and the prompts so far, touched only under their lock.
    private let progress = Mutex<(nextIndex: Int, calls: Int, prompts: [String])>((0, 0, []))

    /// Creates a sensor that answers with `script` in order, then with `then` forever.
    public init(_ script: [Step], then fallback: Step? = nil) {
        self.steps = script
        self.fallback = fallback
    }

    /// A sensor that always matches `print`.
    public static func alwaysMatching(_ print: EnrolledPrintID = "finger-1") -> ScriptedSensor {
        ScriptedSensor([], then: .success(.match(print)))
    }

    /// A sensor that never matches.
    public static func neverMatching() -> ScriptedSensor {
        ScriptedSensor([], then: .success(.noMatch))
    }

    /// A sensor that always throws `error`.
    public static func failing(with error: SensorError) -> ScriptedSensor {
        ScriptedSensor([], then: .failure(error))
    }

    /// How many times ``identify(prompt:)`` has been called.
    public var callCount: Int { progress.withLock { $0.calls } }

    /// The prompts passed so far, in order.
    public var receivedPrompts: [String] { progress.withLock { $0.prompts } }

    /// How many scripted steps have not been played yet (the fallback not counted).
    public var remainingSteps: Int { progress.withLock { steps.count - $0.nextIndex } }

    /// Plays the next step of the script.
    public func identify(prompt: String) async throws(SensorError) -> SensorOutcome {
        let step: Step = progress.withLock { progress in
            progress.calls += 1
            progress.prompts.append(prompt)
            if progress.nextIndex < steps.count {
                defer { progress.nextIndex += 1 }
                return steps[progress.nextIndex]
            }
            return fallback ?? .failure(.unavailable)
        }
        return try step.get()
    }
}
