import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

/// The policy core's ``BiometricSensor`` over a reader of the service's ``ReaderPort``.
///
/// The reader is opened lazily, on the first ``identify(prompt:)``: when the evaluator
/// refuses first (lockout, nothing enrolled, passphrase needed) no reader is even
/// enumerated and no finger is asked for. Each call is one capture with exactly one
/// `finger-needed` prompt (the evaluator restarts after a poor scan, within its one scan
/// budget); the finger is matched against the sealed prints enrolled on that reader,
/// optionally only those of one user or finger. Call ``close()`` when done.
actor ReaderSensor: BiometricSensor {
    /// Which stored prints may match.
    struct Candidates: Sendable {
        var user: String?
        var finger: String?
    }

    private let device: String?
    private let readers: any ReaderPort
    private let interaction: any Interaction
    /// Made when the reader opens: a decision the reuse window serves needs no prints, and
    /// deriving the template key was a tenth of an agent's signature.
    private let prints: @Sendable () throws -> PrintStore
    private let candidates: Candidates
    private let operation: String
    private var handle: (any ReaderHandle)?
    /// Runs once the reader is open, before any finger is asked for (readers with storage:
    /// removing what an interrupted enrollment left there).
    private let prepare: (@Sendable (any ReaderHandle) async -> Void)?
    private var gallery: [(id: EnrolledPrintID, stored: StoredPrint)] = []
    private var scans = 0
    /// The error behind the last ``SensorError/unavailable``, for the message.
    private(set) var lastFailure: (any Error)?

    /// A sensor on `device` (id or driver; nil: the first reader) of `readers`, matching `prints`.
    init(device: String?, readers: any ReaderPort, interaction: any Interaction,
         prints: @escaping @Sendable () throws -> PrintStore,
         candidates: Candidates = Candidates(), operation: String = "authorize",
         prepare: (@Sendable (any ReaderHandle) async -> Void)? = nil) {
        self.prepare = prepare
        self.device = device
        self.readers = readers
        self.interaction = interaction
        self.prints = prints
        self.candidates = candidates
        self.operation = operation
    }

    func identify(prompt: String) async throws(SensorError) -> SensorOutcome {
        do {
            let handle = try await openIfNeeded(prompt: prompt)
            scans += 1
            // With one candidate the prompt can name its finger.
            let named = candidates.finger ?? (gallery.count == 1 ? gallery[0].stored.finger : nil)
            let index = try await handle.match(gallery.map(\.stored.template), operation: operation, finger: named)
            return index.map { .match(gallery[$0].id) } ?? .noMatch
        } catch {
            throw map(error)
        }
    }

    /// The stored print behind an id this sensor reported.
    func stored(_ id: EnrolledPrintID) -> StoredPrint? {
        gallery.first { $0.id == id }?.stored
    }

    /// Closes the reader if it was opened.
    func close() async {
        await handle?.close()
        handle = nil
    }

    private func openIfNeeded(prompt: String) async throws -> any ReaderHandle {
        if let handle { return handle }
        // Only once there is a reader to touch.
        let handle = try await readers.open(device: device, interaction: interaction)
        self.handle = handle
        await prepare?(handle)
        interaction.event(InteractionEvent(.touchNeeded, prompt))
        let info = handle.info
        var gallery: [(EnrolledPrintID, StoredPrint)] = []
        for stored in try prints().prints(user: candidates.user, finger: candidates.finger,
                                        driver: info.driver, deviceID: info.deviceID) {
            gallery.append((EnrollmentTracker.printID(stored), stored))
        }
        guard !gallery.isEmpty else {
            let who = [candidates.finger, candidates.user.map { "of \($0)" }].compactMap { $0 }.joined(separator: " ")
            throw ServiceError.nothingEnrolled("nothing enrolled\(who.isEmpty ? "" : " for \(who)") on \(info.name) "
                                               + "(\(info.deviceID)); run: touchgate enroll")
        }
        // A reader with its own storage that lost a print (cleared by another program) would only
        // answer "no match" for it: leave those out, and say what to do when none is left.
        let lost = try await lostFromReader(gallery.map(\.1), handle: handle)
        if !lost.isEmpty {
            gallery = gallery.enumerated().filter { !lost.contains($0.offset) }.map(\.element)
            guard !gallery.isEmpty else {
                throw ServiceError.nothingEnrolled(
                    "\(info.name) (\(info.deviceID)) no longer holds the print enrolled for this finger; see: "
                        + "touchgate prints list. Delete the stored print (touchgate prints delete --finger NAME) and "
                        + "enroll the finger again")
            }
        }
        self.gallery = gallery
        return handle
    }

    /// Which of `stored` a reader with its own storage no longer holds (none for a reader
    /// that is not libfprint's: it keeps no prints of its own).
    private func lostFromReader(_ stored: [StoredPrint], handle: any ReaderHandle) async throws -> Set<Int> {
        guard let session = handle.session, session.info.features.contains(.storageList) else { return [] }
        var prints: [Print] = []
        for print in stored { prints.append(try await Print(serialized: print.template)) }
        return try await TouchgateService.lostFromReader(prints, session: session)
    }

    private func map(_ error: any Error) -> SensorError {
        let mapped = SensorError.from(error, interaction: interaction, nextAttempt: scans + 1)
        if mapped == .unavailable { lastFailure = error }
        return mapped
    }
}
