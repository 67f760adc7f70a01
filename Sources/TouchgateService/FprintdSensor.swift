import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateAPI

/// The policy core's ``BiometricSensor`` through fprintd, which owns the reader.
///
/// The reader is claimed lazily, on the first ``identify(prompt:)`` (a refusal before that
/// claims nothing). Each call is one `VerifyStart` against the user's fingers enrolled in
/// fprintd (`any`, or the one finger asked for), with its events turned into the same
/// prompts as a reader opened directly. fprintd's verdicts map as the policy core expects:
/// match and no-match are answers; a poor scan (`verify-retry-scan`, `-swipe-too-short`,
/// `-finger-not-centered`, `-remove-and-retry`) is a retry; `verify-disconnected` a
/// disconnection; anything else leaves the sensor unavailable, with the cause kept for the
/// message. Call ``close()`` when done: it releases the claim (a cancelled verification has
/// already been stopped by then).
actor FprintdSensor: BiometricSensor {
    private let target: FprintdTarget
    private let user: String
    /// Touchgate's name of the one finger to check, or nil for any.
    private let finger: String?
    private let interaction: any Interaction
    private let operation: String
    private var claim: FprintdClaim?
    private var scans = 0
    private var matched: [EnrolledPrintID: String?] = [:]
    /// The error behind the last ``SensorError/unavailable``, for the message.
    private(set) var lastFailure: (any Error)?

    init(target: FprintdTarget, user: String, finger: String?, interaction: any Interaction, operation: String) {
        self.target = target
        self.user = user
        self.finger = finger
        self.interaction = interaction
        self.operation = operation
    }

    func identify(prompt: String) async throws(SensorError) -> SensorOutcome {
        do {
            let claim = try await claimIfNeeded(prompt: prompt)
            scans += 1
            let fprintdFinger = finger.flatMap(Finger.init(name:))?.fprintdName ?? "any"
            let prompter = Prompter(interaction: interaction, info: target.info, operation: operation, finger: finger)
            let result = try await prompter.prompting { events in
                try await claim.verify(finger: fprintdFinger, events: events)
            }
            guard result.matched else { return .noMatch }
            // fprintd names the finger it checked (VerifyFingerSelected). Only a finger name
            // is taken from it, and when one finger was asked for, only that one: a match
            // reported for another finger is no answer to the question asked.
            let reported = result.finger.flatMap(Vocabulary.finger)
            if let finger, reported != finger {
                throw FprintdError.failed(name: "verify-match", detail: "fprintd reported a match of "
                                          + "\(result.finger.map(StoredText.escaped) ?? "no finger"), not of \(finger) as asked")
            }
            let id = EnrollmentTracker.fprintdPrintID(user: user, finger: reported.flatMap { Finger(name: $0)?.fprintdName }
                                                      ?? "any", device: target.device)
            matched[id] = reported
            return .match(id)
        } catch {
            throw map(error)
        }
    }

    /// Touchgate's name of the finger behind an id this sensor reported (nil when fprintd
    /// matched against all the user's fingers and did not say which).
    func finger(of id: EnrolledPrintID) -> String? {
        matched[id] ?? nil
    }

    /// Releases the reader if it was claimed.
    func close() async {
        if let claim { try? await claim.release() }
        claim = nil
    }

    private func claimIfNeeded(prompt: String) async throws -> FprintdClaim {
        if let claim { return claim }
        // A reader nobody can touch (a closed lid over it) is refused before fprintd is asked.
        try await target.presence?.check()
        let claim = try await target.client.claim(target.device, user: user)
        self.claim = claim
        interaction.event(InteractionEvent(.touchNeeded, prompt))
        return claim
    }

    private func map(_ error: any Error) -> SensorError {
        let mapped = SensorError.from(error, interaction: interaction, nextAttempt: scans + 1)
        if mapped == .unavailable { lastFailure = error }
        return mapped
    }
}
