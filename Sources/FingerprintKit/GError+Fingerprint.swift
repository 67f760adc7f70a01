import CFPrint

/// The one place where a `GError` becomes a Swift error.
///
/// The error is copied out (domain, code, message) and freed at once. Cancellation
/// (`G_IO_ERROR_CANCELLED`) becomes `CancellationError`; libfprint's device and retry
/// domains become ``FingerprintError`` cases.
enum GErrorFunnel {
    /// Converts and frees `error`.
    ///
    /// A `GError` whose domain is no registered quark is one its driver freed before
    /// libfprint handed it over: libfprint 1.94.5's fpcmoc driver does this when an
    /// enrollment fails and its cleanup command fails too (the task's error is freed with
    /// the state machine, then returned). Its fields are whatever reused the memory, so
    /// neither its message is read (a stray pointer) nor is it freed (a second free would
    /// corrupt the heap); it becomes a general device error with a message that holds still.
    static func consume(_ error: UnsafeMutablePointer<GError>) -> any Error {
        let domain = error.pointee.domain
        guard g_quark_to_string(domain) != nil else { return lostReport }
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        g_error_free(error)
        if domain == g_io_error_quark() {
            if code == Int32(G_IO_ERROR_CANCELLED.rawValue) { return CancellationError() }
            if code == Int32(G_IO_ERROR_INVALID_DATA.rawValue) {
                return FingerprintError.invalidPrintData(detail: message)
            }
        }
        if domain == fp_device_error_quark() {
            return FingerprintError.device(DeviceErrorCode(rawValue: code), detail: message)
        }
        if domain == fp_device_retry_quark() {
            return FingerprintError.retry(RetryReason(rawValue: code))
        }
        let name = g_quark_to_string(domain).map { String(cString: $0) } ?? "unknown"
        return FingerprintError.other(domain: name, code: code, detail: message)
    }

    /// What a freed (unreadable) `GError` becomes; see ``consume(_:)``.
    static let lostReport = FingerprintError.device(.general, detail: "its driver lost the details of what went wrong")

    /// Calls `body` with a `GError**`; throws the converted error if one was set.
    static func check<T>(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws -> T {
        var error: UnsafeMutablePointer<GError>?
        let result = body(&error)
        if let error { throw consume(error) }
        return result
    }
}
