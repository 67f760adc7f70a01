import ArgumentParser
@preconcurrency import Dispatch
import Foundation
import TouchgateAPI

/// Runs a command's body with the conventions every command shares: Ctrl-C (or SIGTERM)
/// cancels the running request, which releases the reader before the process exits;
/// errors are reported once, in text or JSON, and become the documented exit status.
enum CommandRunner {
    static func run(json: Bool, _ body: @escaping @Sendable (Console) async throws -> Int32) async throws {
        let console = Console(json: json)
        let task = Task { try await body(console) }
        let signals = SignalCancellation { task.cancel() }
        defer { signals.stop() }
        let status: Int32
        do {
            status = try await task.value
        } catch {
            let failure = error as? ServiceError
                ?? (error is CancellationError ? .cancelled : ServiceError(.error, String(describing: error)))
            console.failure(failure)
            throw ExitCode(failure.exitStatus)
        }
        if status != ExitStatus.success { throw ExitCode(status) }
    }
}

/// Turns SIGINT and SIGTERM into task cancellation; a second signal exits at once.
///
/// `@unchecked Sendable`: `sources` is set once in init; dispatch sources are thread-safe.
final class SignalCancellation: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ cancel: @escaping @Sendable () -> Void) {
        let fired = OnceFlag()
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if fired.setOnce() { cancel() } else { exit(ExitStatus.cancelled) }
            }
            source.resume()
            return source
        }
    }

    func stop() {
        for source in sources { source.cancel() }
    }
}

/// A thread-safe one-shot flag.
final class OnceFlag: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = false

    /// Sets the flag; returns true the first time only.
    func setOnce() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if value { return false }
        value = true
        return true
    }
}

/// The terminal side of a request: events to the console, passphrases from the
/// terminal or `--passphrase-fd`, confirmations at the terminal unless given in advance
/// (`--yes`, `--replace`).
struct TerminalInteraction: Interaction {
    let console: Console
    let input: PassphraseInput
    /// Whether the person confirmed in advance.
    let assumeYes: Bool

    init(console: Console, input: PassphraseInput = PassphraseInput(fileDescriptor: nil), assumeYes: Bool = false) {
        self.console = console
        self.input = input
        self.assumeYes = assumeYes
    }

    func event(_ event: InteractionEvent) {
        console.event(event)
    }

    func passphrase(prompt: String, again: Bool) throws -> SecretBytes {
        do {
            return try input.passphrase(prompt: prompt, again: again)
        } catch let error as PassphraseInputError {
            throw error.serviceError
        }
    }

    func newPassphrase(prompt: String) throws -> SecretBytes {
        do {
            return try input.newPassphrase(prompt: prompt)
        } catch let error as PassphraseInputError {
            throw error.serviceError
        }
    }

    var canAskAgain: Bool { input.fileDescriptor == nil }

    func confirm(_ question: String, details: [String]) throws -> Bool {
        if assumeYes { return true }
        return try TerminalQuestion.ask(question, details: details.map { "  " + StoredText.escaped($0) })
    }
}
