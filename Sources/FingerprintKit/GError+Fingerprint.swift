import CFPrint

/// The one place where a `GError` becomes a Swift error.
///
/// The error is copied out (domain, code, message) and freed at once. Cancellation
/// (`G_IO_ERROR_CANCELLED`) becomes `CancellationError`; libfprint's device and retry
/// domains become ``FingerprintError`` cases.
enum GErrorFunnel {
    /// Converts and frees `error`.
    static func consume(_ error: UnsafeMutablePointer<GError>) -> any Error {
        let domain = error.pointee.domain
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

    /// Calls `body` with a `GError**`; throws the converted error if one was set.
    static func check<T>(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws -> T {
        var error: UnsafeMutablePointer<GError>?
        let result = body(&error)
        if let error { throw consume(error) }
        return result
    }
}
