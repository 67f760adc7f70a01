import CFPrint

/// A failure reported by fprintd or by the system bus on the way to it.
///
/// fprintd's own D-Bus errors (`net.reactivated.Fprint.Error.*`) become the cases below;
/// messages say what happened and what to do next. A scan that must be repeated, a reader
/// that went away and cancellation are reported as they are for a reader opened directly:
/// ``FingerprintError/retry(_:)``, ``DeviceErrorCode/removed`` and `CancellationError`.
public enum FprintdError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No system bus, or nobody owns or can start `net.reactivated.Fprint`.
    case notRunning(detail: String)
    /// fprintd has no reader (`NoSuchDevice`).
    case noReader
    /// Another program has claimed the reader through fprintd (`AlreadyInUse`).
    case busy
    /// polkit refused the request (`PermissionDenied`).
    case permissionDenied(detail: String)
    /// The user has no finger enrolled in fprintd (`NoEnrolledPrints`).
    case noEnrolledPrints(user: String)
    /// Any other error: the D-Bus error name (or fprintd's status) and its message.
    case failed(name: String, detail: String)

    public var description: String {
        switch self {
        case let .notRunning(detail):
            return "fprintd is not running on the system bus (\(detail)); start it, or use the reader directly "
                + "with TOUCHGATE_READER_BACKEND=libfprint"
        case .noReader:
            return "fprintd has no fingerprint reader; plug one in and try again (fprintd-list shows what it sees)"
        case .busy:
            return "another program is using the reader through fprintd (a lock screen, fprintd-verify?); "
                + "finish there and try again"
        case let .permissionDenied(detail):
            return "fprintd refused: \(detail); polkit must allow net.reactivated.fprint.device.verify for this user"
        case let .noEnrolledPrints(user):
            return "no finger of \(user) is enrolled in fprintd; enroll one with: fprintd-enroll -f right-index-finger "
                + "(or in your desktop's settings)"
        case let .failed(name, detail):
            return "fprintd reported \(name)" + (detail.isEmpty ? "" : ": \(detail)") + "; try again"
        }
    }
}

/// Where a `GError` from GDBus becomes a Swift error (the D-Bus counterpart of `GErrorFunnel`).
enum DBusErrorFunnel {
    /// Converts and frees `error`; `user` names whose prints a `NoEnrolledPrints` is about.
    static func consume(_ error: UnsafeMutablePointer<GError>, user: String = "") -> any Error {
        let remote = g_dbus_error_get_remote_error(error).map { pointer -> String in
            defer { g_free(pointer) }
            return String(cString: pointer)
        }
        _ = g_dbus_error_strip_remote_error(error)
        let domain = error.pointee.domain
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        g_error_free(error)
        if domain == g_io_error_quark(), code == Int32(G_IO_ERROR_CANCELLED.rawValue) { return CancellationError() }
        switch remote {
        case "net.reactivated.Fprint.Error.NoSuchDevice": return FprintdError.noReader
        case "net.reactivated.Fprint.Error.AlreadyInUse": return FprintdError.busy
        case "net.reactivated.Fprint.Error.PermissionDenied": return FprintdError.permissionDenied(detail: message)
        case "net.reactivated.Fprint.Error.NoEnrolledPrints": return FprintdError.noEnrolledPrints(user: user)
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
             "org.freedesktop.DBus.Error.Spawn.ServiceNotFound", "org.freedesktop.DBus.Error.Spawn.ChildExited",
             "org.freedesktop.DBus.Error.Spawn.Failed", "org.freedesktop.DBus.Error.Spawn.PermissionsInvalid":
            return FprintdError.notRunning(detail: message)
        case let name?:
            return FprintdError.failed(name: name, detail: message)
        case nil:
            // No remote error: the bus itself (no socket, closed connection, timeout).
            return FprintdError.notRunning(detail: message)
        }
    }

    /// Calls `body` with a `GError**`; throws the converted error if one was set.
    static func check<T>(user: String = "", _ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws -> T {
        var error: UnsafeMutablePointer<GError>?
        let result = body(&error)
        if let error { throw consume(error, user: user) }
        return result
    }
}
