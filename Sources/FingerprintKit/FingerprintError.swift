import CFPrint

/// A failure reported by a reader or by libfprint.
///
/// Cancellation is not among these: a cancelled operation throws `CancellationError`.
/// Messages are meant for people and say what to do next; none carries print data.
public enum FingerprintError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reader reported an error (libfprint's `FP_DEVICE_ERROR` domain).
    case device(DeviceErrorCode, detail: String)
    /// The scan was not good enough; the operation ended and can be restarted
    /// (libfprint's `FP_DEVICE_RETRY` domain).
    case retry(RetryReason)
    /// Serialized print data could not be read back.
    case invalidPrintData(detail: String)
    /// The reader cannot do this (for instance capture on a match-on-chip reader).
    case unsupported(String)
    /// Any other GLib error, with its domain and code for bug reports.
    case other(domain: String, code: Int32, detail: String)

    /// Whether the reader went away (unplugged or removed).
    public var isDisconnected: Bool {
        if case .device(.removed, _) = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .device(.busy, let detail) where detail.lowercased().contains("suspended"):
            // Suspended for system sleep (Touchgate's refusal, or libfprint's "Cannot run while
            // suspended."): no other program is to blame.
            return "the reader is suspended (the system is going to sleep or waking up); try again once it has resumed"
        case let .device(code, detail):
            return code.message + (detail.isEmpty ? "" : " (\(detail))")
        case let .retry(reason):
            return reason.message
        case let .invalidPrintData(detail):
            return "the stored fingerprint data is damaged or not from libfprint (\(detail)); delete and enroll the finger again"
        case let .unsupported(what):
            return "this reader cannot \(what)"
        case let .other(domain, code, detail) where domain == "g-usb-device-error-quark":
            // GUsb's errors: the reader stopped answering or the USB transfer failed.
            return "the reader stopped answering over USB (\(detail.isEmpty ? "error \(code)" : detail)); unplug it, "
                + "plug it back in and try again"
        case let .other(domain, code, detail):
            return "\(detail) (\(domain) error \(code))"
        }
    }
}

/// libfprint's device error codes (`FpDeviceError`).
public struct DeviceErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `FP_DEVICE_ERROR_GENERAL`
    public static let general = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_GENERAL.rawValue))
    /// `FP_DEVICE_ERROR_NOT_SUPPORTED`
    public static let notSupported = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_NOT_SUPPORTED.rawValue))
    /// `FP_DEVICE_ERROR_NOT_OPEN`
    public static let notOpen = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_NOT_OPEN.rawValue))
    /// `FP_DEVICE_ERROR_ALREADY_OPEN`
    public static let alreadyOpen = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_ALREADY_OPEN.rawValue))
    /// `FP_DEVICE_ERROR_BUSY`
    public static let busy = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_BUSY.rawValue))
    /// `FP_DEVICE_ERROR_PROTO`
    public static let proto = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_PROTO.rawValue))
    /// `FP_DEVICE_ERROR_DATA_INVALID`
    public static let dataInvalid = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_DATA_INVALID.rawValue))
    /// `FP_DEVICE_ERROR_DATA_NOT_FOUND`
    public static let dataNotFound = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue))
    /// `FP_DEVICE_ERROR_DATA_FULL`
    public static let dataFull = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_DATA_FULL.rawValue))
    /// `FP_DEVICE_ERROR_DATA_DUPLICATE`
    public static let dataDuplicate = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_DATA_DUPLICATE.rawValue))
    /// `FP_DEVICE_ERROR_REMOVED`: the reader was unplugged.
    public static let removed = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_REMOVED.rawValue))
    /// `FP_DEVICE_ERROR_TOO_HOT`
    public static let tooHot = DeviceErrorCode(rawValue: Int32(FP_DEVICE_ERROR_TOO_HOT.rawValue))

    /// What happened and what to do, for a person.
    public var message: String {
        switch self {
        case .general: return "the reader reported an error; try again, and replug it if it keeps failing"
        case .notSupported: return "the reader does not support this operation"
        case .notOpen: return "the reader is not open"
        case .alreadyOpen: return "the reader is already open"
        case .busy: return "the reader is busy with another operation or program (fprintd holds the readers it serves); "
            + "try again when that is done"
        case .proto: return "the reader did not answer as expected; replug it and try again"
        case .dataInvalid: return "the reader rejected the fingerprint data; enroll the finger again"
        case .dataNotFound: return "the print is not stored on the reader; enroll the finger again"
        case .dataFull: return "the reader's storage is full; delete prints you no longer need (touchgate prints delete)"
        case .dataDuplicate: return "this finger is already enrolled on the reader"
        case .removed: return "reader disconnected; plug it back in and try again"
        case .tooHot: return "the reader is too hot; let it cool down for a minute and try again"
        default: return "the reader reported error \(rawValue)"
        }
    }

    public var description: String { message }

    /// Lets `catch DeviceErrorCode.removed` style patterns match a thrown `FingerprintError`.
    public static func ~= (code: DeviceErrorCode, error: any Error) -> Bool {
        if case let FingerprintError.device(actual, _) = error { return actual == code }
        return false
    }
}

/// Why a scan must be repeated (`FpDeviceRetry`).
public struct RetryReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `FP_DEVICE_RETRY_GENERAL`
    public static let general = RetryReason(rawValue: Int32(FP_DEVICE_RETRY_GENERAL.rawValue))
    /// `FP_DEVICE_RETRY_TOO_SHORT`
    public static let tooShort = RetryReason(rawValue: Int32(FP_DEVICE_RETRY_TOO_SHORT.rawValue))
    /// `FP_DEVICE_RETRY_CENTER_FINGER`
    public static let centerFinger = RetryReason(rawValue: Int32(FP_DEVICE_RETRY_CENTER_FINGER.rawValue))
    /// `FP_DEVICE_RETRY_REMOVE_FINGER`
    public static let removeFinger = RetryReason(rawValue: Int32(FP_DEVICE_RETRY_REMOVE_FINGER.rawValue))

    /// A hint for the person at the reader.
    public var message: String {
        switch self {
        case .tooShort: return "swipe too short; swipe your finger again, more slowly"
        case .centerFinger: return "finger not centered; center your finger on the reader and try again"
        case .removeFinger: return "remove your finger and try again"
        default: return "the scan did not work; try again"
        }
    }

    public var description: String { message }

    /// Lets `catch RetryReason.tooShort` style patterns match a thrown `FingerprintError`.
    public static func ~= (reason: RetryReason, error: any Error) -> Bool {
        if case let FingerprintError.retry(actual) = error { return actual == reason }
        return false
    }
}
