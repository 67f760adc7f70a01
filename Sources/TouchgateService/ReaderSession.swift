import FingerprintKit
import Foundation
import TouchgateWire

/// An open reader for one request: picks it, opens it with errors a person can act on,
/// turns its events into prompts, and closes it.
struct ReaderSession: Sendable {
    let context: FingerprintContext
    let reader: Reader
    let interaction: any Interaction

    var info: ReaderInfo { reader.info }

    /// Finds the reader (`device` is a device id or a driver name; default: the first)
    /// and opens it.
    static func open(device: String?, interaction: any Interaction) async throws -> ReaderSession {
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

    /// Opens the reader, runs `body` with it and closes it, also when `body` throws or is cancelled.
    static func with<T: Sendable>(device: String?, interaction: any Interaction,
                                  _ body: (ReaderSession) async throws -> T) async throws -> T {
        let session = try await open(device: device, interaction: interaction)
        do {
            let value = try await body(session)
            await session.close()
            return value
        } catch {
            await session.close()
            throw error
        }
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

    /// Closes the reader; a reader that is already gone is not an error.
    func close() async {
        if await reader.isOpen { try? await reader.close() }
    }

    /// Runs `body` with an events continuation whose events become prompts.
    /// `finger` names the finger in prompts.
    func prompting<T: Sendable>(
        _ operation: String, finger: String?,
        _ body: @Sendable (AsyncStream<ReaderEvent>.Continuation) async throws -> T
    ) async throws -> T {
        let (stream, continuation) = AsyncStream.makeStream(of: ReaderEvent.self)
        let prompter = Prompter(interaction: interaction, info: info, operation: operation, finger: finger)
        let printer = Task { await prompter.consume(stream) }
        do {
            let value = try await body(continuation)
            continuation.finish()
            await printer.value
            return value
        } catch {
            continuation.finish()
            await printer.value
            throw error
        }
    }

    /// One scan matched against `gallery`: identify when there are several prints and the
    /// reader can, else verify against the first. Returns the index that matched, or nil.
    /// A poor scan throws ``FingerprintError/retry(_:)``; the policy core decides whether to restart.
    func match(_ gallery: [Print], operation: String, finger: String?) async throws -> Int? {
        if gallery.count > 1 && info.features.contains(.identify) {
            return try await prompting(operation, finger: finger) { events in
                try await reader.identify(gallery, events: events)
            }
        }
        let matched = try await prompting(operation, finger: finger) { events in
            try await reader.verify(gallery[0], events: events)
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

/// Turns reader events into prompts: exactly one prompt each time the reader starts
/// waiting for a finger, progress after each enroll stage, and retry hints.
struct Prompter: Sendable {
    let interaction: any Interaction
    let info: ReaderInfo
    let operation: String
    let finger: String?

    func consume(_ stream: AsyncStream<ReaderEvent>) async {
        // One prompt per wait. Drivers report "needed" again without a new wait (needed, none,
        // needed before any finger; needed+present, needed while a scan is read), so only a
        // finished enroll stage or a retry starts a new wait.
        var prompted = false
        var completed = 0
        for await event in stream {
            switch event {
            case .fingerStatus(let status):
                if status.isWaitingForFinger && !prompted {
                    prompt(stage: completed + 1)
                    prompted = true
                }
            case .enrollStage(let done, let total):
                prompted = false
                completed = done
                var progress = InteractionEvent(.enrollStage, "scan \(done) of \(total) done")
                progress.completed = done
                progress.total = total
                interaction.event(progress)
            case .retry(let reason):
                prompted = false
                interaction.event(Self.retryEvent(reason, attempt: nil))
            }
        }
    }

    private func prompt(stage: Int) {
        let who = finger.map { $0.replacingOccurrences(of: "-", with: " ") + " finger" } ?? "finger"
        let action = info.scanType == .swipe
            ? "Swipe your \(who) across the reader" : "Place your \(who) on the reader"
        var event = InteractionEvent(.fingerNeeded, action)
        event.operation = operation
        event.finger = finger
        event.scanType = info.scanType.rawValue
        if operation == "enroll" {
            event.stage = stage
            event.stages = info.enrollStages
            event.message += " (scan \(stage) of \(info.enrollStages))"
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
