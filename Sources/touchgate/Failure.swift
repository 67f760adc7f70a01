import ArgumentParser
import FingerprintKit
import TouchgateImageIO
import TouchgateVault

/// Documented exit statuses (README "Exit codes"). Keep the two in step.
enum Exit {
    /// Success; for verify and identify, a match.
    static let success: Int32 = 0
    /// Verify or identify: the finger did not match.
    static let noMatch: Int32 = 1
    /// No reader found, or it cannot be opened.
    static let noReader: Int32 = 2
    /// Nothing enrolled for this user, finger and reader.
    static let nothingEnrolled: Int32 = 3
    /// The reader was unplugged during the operation.
    static let disconnected: Int32 = 4
    /// The reader failed (busy, protocol error, unsupported, too many poor scans).
    static let readerError: Int32 = 5
    /// Stored data cannot be used (unsafe permissions, damaged database or print, bad file).
    static let dataError: Int32 = 6
    /// Locked out after too many failed attempts.
    static let lockedOut: Int32 = 7
    /// Authentication needed or refused (wrong passphrase, vault locked, item invalidated,
    /// passphrase required).
    static let authentication: Int32 = 8
    /// The finger is already enrolled (use --replace).
    static let alreadyEnrolled: Int32 = 9
    /// `secret exec`: the command could not be started.
    static let commandNotRunnable: Int32 = 127
    /// Usage error (ArgumentParser's own status).
    static let usage: Int32 = 64
    /// Interrupted (Ctrl-C) or cancelled.
    static let cancelled: Int32 = 130
}

/// An error that ends a command: a stable machine code, a message for people, an exit status.
struct Failure: Error, CustomStringConvertible {
    /// Stable identifier for `--json` (`no-reader`, `disconnected`, …).
    let code: String
    /// What happened and what to do next. Never contains a secret or a template.
    let message: String
    /// The process exit status.
    let status: Int32

    var description: String { message }

    static func noReader(_ message: String) -> Failure { Failure(code: "no-reader", message: message, status: Exit.noReader) }
    static func nothingEnrolled(_ message: String) -> Failure {
        Failure(code: "nothing-enrolled", message: message, status: Exit.nothingEnrolled)
    }
    static func readerError(_ message: String) -> Failure { Failure(code: "reader-error", message: message, status: Exit.readerError) }
    static func dataError(_ message: String) -> Failure { Failure(code: "data-error", message: message, status: Exit.dataError) }
    static func usage(_ message: String) -> Failure { Failure(code: "usage", message: message, status: Exit.usage) }
    static let cancelled = Failure(code: "cancelled", message: "cancelled", status: Exit.cancelled)

    /// Maps any error from the layers below to what the user sees.
    static func from(_ error: any Error) -> Failure {
        switch error {
        case let failure as Failure:
            return failure
        case is CancellationError:
            return .cancelled
        case let error as FingerprintError:
            switch error {
            case .device(.removed, _):
                return Failure(code: "disconnected", message: error.description, status: Exit.disconnected)
            case .invalidPrintData:
                return .dataError(error.description)
            default:
                return .readerError(error.description)
            }
        case let error as StoreError:
            if case .alreadyEnrolled = error {
                return Failure(code: "already-enrolled", message: error.description, status: Exit.alreadyEnrolled)
            }
            return .dataError(error.description)
        case let error as GreyImage.FormatError:
            return .dataError(error.description)
        default:
            if let failure = fromVaultLayers(error) { return failure }
            return Failure(code: "error", message: String(describing: error), status: Exit.readerError)
        }
    }
}
