#if canImport(Glibc)
import Glibc
#endif

/// Directories and files only their owner may reach, made so from the first instant.
///
/// Foundation creates with the umask's mode and narrows the mode afterwards, so for a moment
/// another process (of another user, or a second touchgate opening the same new store) saw
/// them open. These create with mode 0700 / 0600 in the `mkdir`/`open` call itself.
public enum PrivateFiles {
    /// Creates `path` and any missing parents with mode 0700; an existing directory is left as it is.
    /// - Throws: ``ServiceError`` (`data-error`) naming the path.
    public static func makeDirectory(_ path: String) throws(ServiceError) {
        var parent = path
        while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
        parent = parent.lastIndex(of: "/").map { String(parent[..<$0]) } ?? ""
        var status = stat()
        if !parent.isEmpty, parent != path, stat(parent, &status) != 0 {
            try makeDirectory(parent)
        }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw Self.failure(path, errno)
        }
    }

    /// Creates the new file `path` (`O_EXCL`, mode 0600, never a link) holding `bytes`,
    /// synced to disk when `sync`. A file already at `path` is an error.
    /// - Throws: ``ServiceError`` (`data-error`) naming the path; nothing is left at `path` when writing fails.
    public static func create(_ path: String, bytes: UnsafeRawBufferPointer, sync: Bool = false) throws(ServiceError) {
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure(path, errno) }
        var failure = writeAll(fd, bytes)
        if failure == 0 && fchmod(fd, 0o600) != 0 { failure = errno }
        if failure == 0 && sync && fsync(fd) != 0 { failure = errno }
        close(fd)
        guard failure == 0 else {
            unlink(path)
            throw Self.failure(path, failure)
        }
    }

    /// Writes all of `bytes` to `fd` (again after `EINTR`); returns 0, or the `errno` that stopped it.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        var done = 0
        while done < bytes.count {
            let count = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count < 0 ? errno : EIO }
            done += count
        }
        return 0
    }

    /// Runs `body` holding an exclusive `flock` on the private file `path` (created 0600 if
    /// missing): processes and threads that lock the same file run their bodies one at a time.
    /// - Throws: ``ServiceError`` (`data-error`) when the lock cannot be taken, or what `body` throws.
    public static func whileLocking<T, E: Error>(_ path: String, _ body: () throws(E) -> T) throws -> T {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Self.failure(path, errno) }
        defer { close(fd) }  // closing releases the lock
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw Self.failure(path, errno) }
        }
        return try body()
    }

    /// What a refused file operation on `path` throws.
    private static func failure(_ path: String, _ code: Int32) -> ServiceError {
        ServiceError(.dataError, "cannot access \(path): \(String(cString: strerror(code)))")
    }
}
