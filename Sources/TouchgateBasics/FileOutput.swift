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

/// Reads with read(2), retried on EINTR: what `FileHandle`'s `read(upToCount:)` and
/// `readDataToEndOfFile()` did, without the full Foundation.
public enum FileInput {
    /// Up to `limit` bytes from the start of the file at `path` (fewer where it ends); nil
    /// when it cannot be opened or read.
    public static func read(_ path: String, upTo limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return read(fd, upTo: limit)
    }

    /// Up to `limit` bytes from `fd`, reading until it ends; nil on a read error.
    public static func read(_ fd: Int32, upTo limit: Int = Int.max) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count < limit {
            let wanted = min(chunk.count, limit - bytes.count)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, wanted) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return bytes
    }
}
