#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes to standard output and standard error, as touchgate-cli makes them.
enum FileOutput {
    /// Writes all of `bytes` to `fd`; false when it cannot.
    @discardableResult
    static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Bool {
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
    static func write(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { _ = write($0, to: fd) }
    }

    /// Writes `text` to `fd`.
    static func write(_ text: String, to fd: Int32) {
        write(Array(text.utf8), to: fd)
    }
}
