#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes of whole buffers to a descriptor (standard output and error), retried
/// on EINTR and short writes, so that progress lines and results never interleave out of
/// order; both `touchgate` binaries write through it.
public enum FileOutput {
    /// Writes all of `bytes` to `fd`; false when it cannot.
    @discardableResult
    public static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Writes `bytes` to `fd`.
    public static func write(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { _ = write($0, to: fd) }
    }

    /// Writes `text` to `fd`.
    public static func write(_ text: String, to fd: Int32) {
        write(Array(text.utf8), to: fd)
    }
}
