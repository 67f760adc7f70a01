import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Tells a write that failed for want of room (a full file system, a used-up quota) from
/// other failures, so that it is reported as such and never as damage: a "damaged,
/// restore it or move it away" message on a full disk would invite losing the vault.
public enum DiskSpace {
    /// Below this many free bytes a file system counts as full when SQLite or a file write
    /// reports only a generic I/O error.
    static let nearlyFull: UInt64 = 256 * 1024

    /// Whether `error`, thrown while writing a store in `directory`, means there was no
    /// room: SQLite's `SQLITE_FULL`, `ENOSPC` or `EDQUOT` from a file operation, or an I/O
    /// error while the file system holding `directory` has next to no space left (SQLite
    /// reports `EDQUOT` and some `ENOSPC` that way).
    public static func isExhausted(_ error: any Error, directory: String) -> Bool {
        switch error {
        case let error as StoreError:
            switch error {
            case .noSpace: return true
            case .io: return hasNoRoom(directory)
            default: return false
            }
        case let error as DatabaseError:
            switch error.resultCode {
            case DatabaseError.full: return true
            case DatabaseError.ioError, DatabaseError.cannotOpen: return hasNoRoom(directory)
            default: return false
            }
        case let error as POSIXError:
            return error.code == .ENOSPC || error.code == .EDQUOT
        case let error as CocoaError:
            if error.code == .fileWriteOutOfSpace { return true }
            // FileManager's errors carry the system call's under this key.
            if let underlying = error.userInfo["NSUnderlyingError"] as? any Error {
                return isExhausted(underlying, directory: directory)
            }
            return false
        default:
            return false
        }
    }

    /// Whether the file system holding `directory` has (next to) no space for this user.
    static func hasNoRoom(_ directory: String) -> Bool {
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return false }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize) < nearlyFull
    }
}
