import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What changes when a file is replaced or written: device, inode, size, and the
/// modification and status-change times to the nanosecond.
package struct FileIdentity: Equatable, Sendable {
    package let device, inode: UInt64
    let size: Int64
    let modifiedSeconds, modifiedNanoseconds, changedSeconds, changedNanoseconds: Int

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
        changedSeconds = info.st_ctim.tv_sec
        changedNanoseconds = info.st_ctim.tv_nsec
    }

    /// The identity of what is at `path` (not following a link); nil when nothing is.
    package init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// Whether both are the same file (device and inode), written since or not.
    package func isSameFile(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }
}
