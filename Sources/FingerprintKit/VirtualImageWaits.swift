#if canImport(Glibc)
import Glibc
#endif

/// libfprint's `virtual_image` driver (a debugging reader that takes images over a Unix
/// socket, `FP_VIRTUAL_IMAGE`) accepts an image only while it waits for a finger, and tells
/// nobody outside this process when that is. So that a development tool can play the finger
/// for whichever program holds the reader (touchgated, the agent, a gpg helper), each wait
/// is announced beside the driver's socket: `<socket>.waiting` holds this process's id and a
/// count that grows by one per wait (`virtual-finger --watch` reads it).
///
/// Only for that driver, which no real reader uses; the file holds no secret and no print.
enum VirtualImageWaits {
    /// The driver's name in libfprint.
    static let driver = "virtual_image"

    // GLib thread only.
    nonisolated(unsafe) private static var count = 0

    /// Announces a wait for a finger on the virtual_image reader. GLib thread.
    static func announce() {
        guard let socket = getenv("FP_VIRTUAL_IMAGE").map({ String(cString: $0) }), !socket.isEmpty else { return }
        count += 1
        let text = "\(getpid()) \(count)\n"
        // Nothing planted beside the socket is written through: no link (O_NOFOLLOW), no
        // FIFO that would block (O_NONBLOCK, and a regular file is required), no file of
        // another owner or with other names (a hard link to something that matters).
        let descriptor = open(socket + ".waiting", O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
              info.st_nlink == 1 else { return }
        // Readable by whoever may use the socket, whatever this process's umask.
        _ = fchmod(descriptor, 0o644)
        // The new line over the old one, then cut to its length: a reader never finds the file
        // empty (as it did between a truncation and the write, and took that for a new wait).
        let length = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        if length > 0 { _ = ftruncate(descriptor, off_t(length)) }
    }
}
