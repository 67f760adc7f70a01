import FingerprintKit
import Foundation
import TouchgatePolicy
import TouchgateVault

/// The policy core's ``BiometricSensor`` over a FingerprintKit reader.
///
/// The reader is opened lazily, on the first ``identify(prompt:)``: when the evaluator
/// refuses first (lockout, nothing enrolled, passphrase needed) no reader is even
/// enumerated and no finger is asked for. Each call is one capture with exactly one
/// `finger-needed` prompt (the evaluator restarts after a poor scan); the finger is
/// matched against the sealed prints enrolled on that reader. Call ``close()`` when done.
actor ReaderSensor: BiometricSensor {
    private let device: String?
    private let console: Console
    private let prints: PrintStore
    private var session: ReaderSession?
    private var gallery: [(id: EnrolledPrintID, print: Print)] = []
    /// The error behind the last ``SensorError/unavailable``, for the message.
    private(set) var lastFailure: (any Error)?
    /// Whether the reader was opened.
    private(set) var opened = false

    /// A sensor on `device` (id or driver; nil: the first reader) matching `prints`.
    init(device: String?, console: Console, prints: PrintStore) {
        self.device = device
        self.console = console
        self.prints = prints
    }

    func identify(prompt: String) async throws(SensorError) -> SensorOutcome {
        do {
            let session = try await openIfNeeded(prompt: prompt)
            let index = try await session.match(gallery.map(\.print), operation: "authorize", finger: nil)
            return index.map { .match(gallery[$0].id) } ?? .noMatch
        } catch {
            throw map(error)
        }
    }

    /// Closes the reader if it was opened.
    func close() async {
        await session?.close()
        session = nil
    }

    private func openIfNeeded(prompt: String) async throws -> ReaderSession {
        if let session { return session }
        console.event("touch-needed", [("message", .string(prompt))], text: prompt)
        let session = try await ReaderSession.open(device: device, console: console)
        self.session = session
        opened = true
        let info = session.info
        var gallery: [(EnrolledPrintID, Print)] = []
        for stored in try prints.prints(driver: info.driver, deviceID: info.deviceID) {
            gallery.append((EnrollmentTracker.printID(stored), try await Print(serialized: stored.template)))
        }
        guard !gallery.isEmpty else {
            throw Failure.nothingEnrolled("nothing is enrolled on \(info.name) (\(info.deviceID)); run: touchgate enroll")
        }
        self.gallery = gallery
        return session
    }

    private func map(_ error: any Error) -> SensorError {
        switch error {
        case is CancellationError:
            return .cancelled
        case FingerprintError.retry(let reason):
            switch reason {
            case .tooShort: return .retry(.tooShort)
            case .centerFinger: return .retry(.centerFinger)
            case .removeFinger: return .retry(.removeFinger)
            default: return .retry(.general)
            }
        case let error as FingerprintError where error.isDisconnected:
            return .disconnected
        default:
            lastFailure = error
            return .unavailable
        }
    }
}
