package import FingerprintKit
import TouchgatePolicy
import FoundationEssentials
import TouchgateAPI

/// An open reader for one request: picks it, opens it with errors a person can act on,
/// turns its events into prompts, and closes it (or, taken from a ``ReaderPool``, gives it
/// back open).
package struct ReaderSession: Sendable {
    /// The context the reader belongs to, kept alive while the session is (nil: the pool's).
    let context: FingerprintContext?
    let reader: Reader
    let interaction: any Interaction
    /// The pool the reader came from and goes back to, still open; nil: it is closed at the end.
    var pool: ReaderPool?

    package var info: ReaderInfo { reader.info }

    /// Finds the reader (`device` is a device id or a driver name; default: the first)
    /// and opens it, or takes it from `pool`, open already or opened there.
    static func open(device: String?, interaction: any Interaction, pool: ReaderPool?) async throws -> ReaderSession {
        if let pool {
            return ReaderSession(context: nil, reader: try await pool.take(device: device), interaction: interaction,
                                 pool: pool)
        }
        let context = await FingerprintContext()
        let reader = try await pick(device: device, in: context)
        do {
            try await reader.open()
        } catch let error as FingerprintError {
            throw ServiceError.noReader("cannot open \(reader.info.name) (\(reader.info.driver)): \(error). "
                                        + ReaderDiagnostics.openHint)
        }
        return ReaderSession(context: context, reader: reader, interaction: interaction)
    }

    /// Opens the reader (or takes it from `pool`), runs `body` with it and closes it (or
    /// gives it back), also when `body` throws or is cancelled.
    static func with<T: Sendable>(device: String?, interaction: any Interaction, pool: ReaderPool?,
                                  _ body: (ReaderSession) async throws -> T) async throws -> T {
        try await closing(try await open(device: device, interaction: interaction, pool: pool), { await $0.close() }, body)
    }

    /// Finds a reader without opening it.
    static func pick(device: String?, in context: FingerprintContext) async throws -> Reader {
        let readers = await context.readers()
        guard !readers.isEmpty else { throw ServiceError.noReader(ReaderDiagnostics.noReaderMessage()) }
        guard let device else { return readers[0] }
        if let match = readers.first(where: { $0.info.deviceID == device })
            ?? readers.first(where: { $0.info.driver == device }) {
            return match
        }
        let known = readers.map { "\($0.info.deviceID) (\($0.info.driver))" }.joined(separator: ", ")
        throw ServiceError.noReader("no reader with id or driver '\(StoredText.escaped(device))'; connected: \(known)")
    }

    /// Closes the reader, or gives it back to its pool (which closes it only when it was
    /// unplugged); a reader that is already gone is not an error.
    package func close() async {
        if let pool { return await pool.giveBack(reader) }
        if await reader.isOpen { try? await reader.close() }
    }

    /// Runs `body` with an events continuation whose events become prompts, progress and
    /// hints, by ``PromptRule``: one prompt each time the reader waits for a scan.
    /// `finger` names the finger in prompts.
    func prompting<T: Sendable>(
        _ operation: String, finger: String?,
        _ body: @Sendable (AsyncStream<ReaderEvent>.Continuation) async throws -> T
    ) async throws -> T {
        try await Prompter(interaction: interaction, info: info, operation: operation, finger: finger).prompting(body)
    }

    /// One scan matched against `gallery`: identify when there are several prints and the
    /// reader can, else verify against the first. Returns the index that matched, or nil.
    /// A poor scan throws ``FingerprintError/retry(_:)``; the policy core decides whether to restart.
    func match(_ gallery: [Print], operation: String, finger: String?) async throws -> Int? {
        if gallery.count > 1 && info.features.contains(.identify) {
            return try await prompting(operation, finger: finger) { events in
                try await reader.identify(gallery, events: events).index
            }
        }
        let matched = try await prompting(operation, finger: finger) { events in
            try await reader.verify(gallery[0], events: events).matched
        }
        return matched ? 0 : nil
    }
}

extension ReaderInfo {
    /// The wire form.
    var report: ReaderReport {
        ReaderReport(deviceID: deviceID, driver: driver, name: name, scanType: scanType.rawValue,
                     enrollStages: enrollStages, features: features.names)
    }
}

/// Runs a ``PromptRule`` over one operation: feeds it the inputs, keeps its grace
/// periods, and turns its outputs into interaction events.
struct Prompter: Sendable {
    let interaction: any Interaction
    let info: ReaderInfo
    let operation: String
    let finger: String?

    /// Runs `body` (one reader operation, direct or through fprintd) with an events
    /// continuation whose events become prompts, progress and hints.
    func prompting<T: Sendable>(
        _ body: @Sendable (AsyncStream<ReaderEvent>.Continuation) async throws -> T
    ) async throws -> T {
        let (events, continuation) = AsyncStream.makeStream(of: ReaderEvent.self)
        let (inputs, feed) = AsyncStream.makeStream(of: PromptRule.Input.self)
        let printer = Task { await run(inputs, feed: feed) }
        feed.yield(.started)
        // The reader finishes its stream when the operation ends, so every event is fed
        // before the outcome.
        let watchdog = FingerWait(timeout: FingerWait.timeout, reader: info.name)
        let forwarder = Task {
            for await event in events {
                watchdog.activity(event)
                feed.yield(PromptRule.Input(event))
            }
        }
        func end(_ succeeded: Bool) async {
            continuation.finish()
            await forwarder.value
            feed.yield(.finished(succeeded: succeeded))
            feed.finish()
            await printer.value
        }
        do {
            let value = try await watchdog.bounding { try await body(continuation) }
            await end(true)
            return value
        } catch {
            // A poor scan ends a verify or identify with its scan taken: its prompt still
            // comes before the hint.
            if case FingerprintError.retry = error { await end(true) } else { await end(false) }
            throw error
        }
    }

    /// Consumes `inputs` until they finish; grace periods end through `feed`.
    func run(_ inputs: AsyncStream<PromptRule.Input>, feed: AsyncStream<PromptRule.Input>.Continuation) async {
        // libfprint's image-device layer (readers that capture) reports "needed" as each wait starts.
        var rule = PromptRule(stages: operation == "enroll" ? info.enrollStages : nil,
                              timely: info.features.contains(.capture))
        var timers: [Task<Void, Never>] = []
        // The rule derives its grace periods from when the driver reported what.
        let clock = ContinuousClock()
        let began = clock.now
        for await input in inputs {
            for output in rule.handle(input, at: clock.now - began) {
                switch output {
                case let .prompt(stage, stages):
                    prompt(stage: stage, stages: stages)
                case let .progress(done, total):
                    let message = done == total && total < info.enrollStages
                        ? "scan \(done) of \(total) done (the reader finished before the \(info.enrollStages) it announced)"
                        : "scan \(done) of \(total) done"
                    var progress = InteractionEvent(.enrollStage, message)
                    progress.completed = done
                    progress.total = total
                    interaction.event(progress)
                case .retry(let reason):
                    interaction.event(Self.retryEvent(reason, attempt: nil))
                case let .startGrace(wait, grace):
                    timers.append(Task {
                        try? await Task.sleep(for: grace)
                        feed.yield(.graceElapsed(wait: wait))
                    })
                }
            }
        }
        for timer in timers { timer.cancel() }
    }

    private func prompt(stage: Int, stages: Int) {
        let who = finger.map { $0.replacing("-", with: " ") + " finger" } ?? "finger"
        let action = info.scanType == .swipe
            ? "Swipe your \(who) across the reader" : "Place your \(who) on the reader"
        var event = InteractionEvent(.fingerNeeded, action)
        event.operation = operation
        event.finger = finger
        event.scanType = info.scanType.rawValue
        if operation == "enroll" {
            event.stage = stage
            event.stages = stages
            event.message += " (scan \(stage) of \(stages))"
        }
        interaction.event(event)
    }

    /// The hint for a poor scan; `attempt` is the scan that comes next, when counted.
    static func retryEvent(_ reason: RetryReason, attempt: Int?) -> InteractionEvent {
        var event = InteractionEvent(.retry, reason.message)
        event.reason = name(of: reason)
        event.attempt = attempt
        return event
    }

    static func name(of reason: RetryReason) -> String {
        switch reason {
        case .tooShort: return "too-short"
        case .centerFinger: return "center-finger"
        case .removeFinger: return "remove-finger"
        default: return "general"
        }
    }
}

/// Runs `body` with `resource`, then `close`s it, also when `body` throws or is cancelled.
func closing<Resource, T>(_ resource: Resource, _ close: (Resource) async -> Void,
                          _ body: (Resource) async throws -> T) async throws -> T {
    do {
        let value = try await body(resource)
        await close(resource)
        return value
    } catch {
        await close(resource)
        throw error
    }
}

extension SensorError {
    /// What a failed scan means to the policy core, for any sensor: a poor scan is a retry
    /// (and its hint is shown now), a vanished reader is `disconnected`, the rest `unavailable`.
    static func from(_ error: any Error, interaction: any Interaction, nextAttempt: Int) -> SensorError {
        switch error {
        case is CancellationError:
            return .cancelled
        case FingerprintError.retry(let reason):
            interaction.event(Prompter.retryEvent(reason, attempt: nextAttempt))
            switch reason {
            case .tooShort: return .retry(.tooShort)
            case .centerFinger: return .retry(.centerFinger)
            case .removeFinger: return .retry(.removeFinger)
            default: return .retry(.general)
            }
        case let error as FingerprintError where error.isDisconnected:
            return .disconnected
        default:
            return .unavailable
        }
    }
}
