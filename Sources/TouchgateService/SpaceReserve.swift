import FoundationEssentials
public import Logging
import TouchgateVault
import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// Disk space set aside so that deleting a secret and locking a vault, and the audit
/// records they write, still work when the disk is full.
///
/// touchgated shares its filesystem with every user (and often with their homes): one of
/// them can fill it, and then every write fails, the ones that would free space or end a
/// session among them. The daemon keeps a file of ``bytes`` allocated in its state
/// directory; when `secret rm` or `lock` fails for a full disk, the file is removed and the
/// request tried once more, and the log says so. It is allocated again once the disk has
/// room for it and as much again (``replenish()``, called by the daemon's sweeper).
///
/// Allocated with `posix_fallocate`, so the blocks are really taken (a sparse file would
/// set nothing aside).
public final class SpaceReserve: Sendable {
    /// The reserve file.
    public let path: String
    /// Its size.
    public let bytes: Int
    private let logger: Logger

    /// A reserve of `bytes` at `path` (nothing is allocated until ``replenish()``).
    public init(path: String, bytes: Int = 8 << 20, logger: Logger) {
        self.path = path
        self.bytes = bytes
        self.logger = logger
    }

    /// Whether the reserve is allocated now.
    public var isHeld: Bool {
        var status = stat()
        return stat(path, &status) == 0 && Int(status.st_size) >= bytes
    }

    /// Allocates the reserve if it is not, and the disk has room for it twice over (so
    /// taking it back never fills the disk itself). Returns whether it is held afterwards.
    @discardableResult
    public func replenish() -> Bool {
        if isHeld { return true }
        var filesystem = statvfs()
        guard statvfs(PathText.deletingLastComponent(of: path), &filesystem) == 0,
              UInt64(filesystem.f_bavail) * UInt64(filesystem.f_frsize) >= UInt64(bytes) * 2 else { return false }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard posix_fallocate(descriptor, 0, off_t(bytes)) == 0 else {
            unlink(path)
            return false
        }
        logger.info("disk reserve of \(bytes / 1024 / 1024) MiB set aside at \(path), for secret rm and lock on a full disk")
        return true
    }

    /// Gives the reserve back to the filesystem; false when there was none to give.
    func release(for what: String) -> Bool {
        guard isHeld, unlink(path) == 0 else { return false }
        logger.warning("""
            the disk is full: the reserve of \(bytes / 1024 / 1024) MiB was given back so that \(what) can go ahead; \
            free space on it (it is set aside again once there is room)
            """)
        return true
    }
}

extension TouchgateService {
    /// Runs `body`; when it fails for a full disk and a reserve is held, gives the reserve
    /// back and runs it once more. For the writes that free space or end a session.
    func usingReserve<T>(for what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            guard DiskSpace.isExhausted(error, directory: location.directory.path)
                    || (error as? ServiceError)?.code == .diskFull,
                  let reserve = spaceReserve, reserve.release(for: what) else { throw error }
            return try await body()
        }
    }
}
