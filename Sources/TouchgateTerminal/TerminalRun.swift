@preconcurrency import Dispatch
import Synchronization
public import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// Runs a command's body with the conventions every command shares, for every executable
/// that runs commands (`touchgate-cli`, `touchgate-client` and the `touchgate` front): Ctrl-C
/// (or SIGTERM) cancels the running request, which releases the reader before the process
/// exits; errors are reported once, in text or JSON, and become the documented exit status.
public enum TerminalRun {
    /// Runs `body` and returns the exit status it gives, or the one of the error it throws.
    public static func run(json: Bool, _ body: @escaping @Sendable (Console) async throws -> Int32) async -> Int32 {
        let console = Console(json: json)
        let task = Task { try await body(console) }
        let signals = SignalCancellation { task.cancel() }
        defer { signals.stop() }
        do {
            return try await task.value
        } catch {
            let failure = error as? ServiceError
                ?? (error is CancellationError ? .cancelled : ServiceError(.error, String(describing: error)))
            console.failure(failure)
            return failure.exitStatus
        }
    }
}

/// Turns SIGINT and SIGTERM into task cancellation; a second signal exits at once.
///
/// `@unchecked Sendable`: `sources` is set once in init; dispatch sources are thread-safe.
final class SignalCancellation: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ cancel: @escaping @Sendable () -> Void) {
        let fired = Atomic<Bool>(false)
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if !fired.exchange(true, ordering: .relaxed) { cancel() } else { exit(ExitStatus.cancelled) }
            }
            source.resume()
            return source
        }
    }

    func stop() {
        for source in sources { source.cancel() }
    }
}

/// The terminal side of a request: events to the console, passphrases from the
/// terminal or `--passphrase-fd`, confirmations at the terminal unless given in advance
/// (`--yes`, `--replace`).
public struct TerminalInteraction: Interaction {
    public let console: Console
    public let input: PassphraseInput
    /// Whether the person confirmed in advance.
    public let assumeYes: Bool

    public init(console: Console, input: PassphraseInput = PassphraseInput(fileDescriptor: nil), assumeYes: Bool = false) {
        self.console = console
        self.input = input
        self.assumeYes = assumeYes
    }

    public func event(_ event: InteractionEvent) {
        console.event(event)
    }

    public func passphrase(prompt: String, again: Bool) throws -> SecretBytes {
        do {
            return try input.passphrase(prompt: prompt, again: again)
        } catch let error as PassphraseInputError {
            throw error.serviceError
        }
    }

    public func newPassphrase(prompt: String) throws -> SecretBytes {
        do {
            return try input.newPassphrase(prompt: prompt)
        } catch let error as PassphraseInputError {
            throw error.serviceError
        }
    }

    public func repeatPassphrase(prompt: String) throws -> SecretBytes {
        do {
            return try input.repeatPassphrase(prompt: prompt)
        } catch let error as PassphraseInputError {
            throw error.serviceError
        }
    }

    public var canAskAgain: Bool { input.fileDescriptor == nil }

    public func confirm(_ question: String, details: [String]) throws -> Bool {
        if assumeYes { return true }
        return try TerminalQuestion.ask(question, details: details.map { "  " + StoredText.escaped($0) })
    }
}
