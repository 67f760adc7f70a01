import FoundationEssentials
import TouchgateService
import TouchgateSocket
import TouchgateAPI

/// The person behind a client, as the service sees them: events go out on the socket,
/// questions go out as ``DaemonMessage/Kind/ask`` and wait for the client's answer.
struct DaemonInteraction: Interaction {
    let socket: FramedSocket
    let id: UInt64
    let answers: AnswerSlot
    let canAskAgain: Bool
    /// Confirmed in advance (`--yes`).
    let assumeYes: Bool
    /// How long a question waits for its answer.
    var answerTimeout: Duration = .seconds(120)

    func event(_ event: InteractionEvent) {
        var message = DaemonMessage(kind: .event, id: id)
        message.event = event
        socket.send(message)
    }

    func passphrase(prompt: String, again: Bool) async throws -> SecretBytes {
        var question = DaemonMessage.Question(kind: "passphrase", prompt: prompt)
        question.again = again
        return try await secret(question)
    }

    func newPassphrase(prompt: String) async throws -> SecretBytes {
        try await secret(DaemonMessage.Question(kind: "new-passphrase", prompt: prompt))
    }

    func repeatPassphrase(prompt: String) async throws -> SecretBytes {
        try await secret(DaemonMessage.Question(kind: "repeat-passphrase", prompt: prompt))
    }

    /// The value of a secret being stored.
    func secretValue() async throws -> SecretBytes {
        try await secret(DaemonMessage.Question(kind: "secret-value", prompt: "value"))
    }

    func confirm(_ question: String, details: [String]) async throws -> Bool {
        if assumeYes { return true }
        var asked = DaemonMessage.Question(kind: "confirm", prompt: question)
        asked.details = details
        let answer = try await ask(asked)
        return answer.message.confirmed ?? false
    }

    private func secret(_ question: DaemonMessage.Question) async throws -> SecretBytes {
        let answer = try await ask(question)
        guard let secret = answer.secret else {
            throw ServiceError(.passphraseInput, "the client answered without the bytes asked for")
        }
        return secret
    }

    private func ask(_ question: DaemonMessage.Question) async throws -> (message: ClientMessage, secret: SecretBytes?) {
        var asking = DaemonMessage(kind: .ask, id: id)
        asking.question = question
        let message = asking
        let timeout = answerTimeout
        let answer = try await answers.wait(timeout: timeout) { [socket] in socket.send(message) }
        if let error = answer.message.error { throw error }
        if answer.message.declined == true { throw CancellationError() }
        return answer
    }
}

/// Where the answer to the one outstanding question of a request arrives.
actor AnswerSlot {
    private var waiting: CheckedContinuation<(message: ClientMessage, secret: SecretBytes?), any Error>?
    /// Questions asked so far: an expiry applies only to the question it was set for.
    private var asked = 0

    /// Runs `send` (which asks the question) and waits for the answer; throws
    /// `CancellationError` when the request is cancelled first, and `timed-out` when no
    /// answer comes within `timeout` (a client that asks and never answers holds nothing
    /// for longer: not the reader, not the store).
    func wait(timeout: Duration,
              after send: @Sendable () -> Void) async throws -> (message: ClientMessage, secret: SecretBytes?) {
        asked += 1
        let question = asked
        let expiry = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.expire(question, after: timeout)
        }
        defer { expiry.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(throwing: CancellationError()) }
                waiting = continuation
                send()
            }
        } onCancel: {
            Task { await self.fail(CancellationError()) }
        }
    }

    private func expire(_ question: Int, after timeout: Duration) {
        guard question == asked, waiting != nil else { return }
        fail(ServiceError(.timedOut, "no answer came within \(timeout.components.seconds) s, so the request was ended "
                          + "and nothing was changed; run the command again and answer when asked"))
    }

    /// Delivers an answer; false when no question is outstanding (the client broke the protocol).
    func deliver(_ message: ClientMessage, secret: SecretBytes?) -> Bool {
        guard let waiting else { return false }
        self.waiting = nil
        waiting.resume(returning: (message, secret))
        return true
    }

    /// Ends the wait with `error` (cancellation, or the client went away).
    func fail(_ error: any Error) {
        waiting?.resume(throwing: error)
        waiting = nil
    }
}
