import FoundationEssentials

/// Errors from Touchgate's on-disk store.
///
/// Messages name the file and what to do; they never contain a template or a secret.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// A file or directory is reachable by other users, or owned by someone else.
    case unsafePermissions(path: String, detail: String)
    /// The file system refused an operation.
    case io(path: String, detail: String)
    /// The database file is not a Touchgate database or is damaged.
    case corrupt(path: String, detail: String)
    /// A print for this user, finger and reader is already stored.
    case alreadyEnrolled(user: String, finger: String)
    /// The file system holding `directory` has no room left (or the quota is used up); the
    /// write was rolled back (``DiskSpace``).
    case noSpace(directory: String)

    public var description: String {
        switch self {
        case let .unsafePermissions(path, detail):
            return "refusing to use \(path): \(detail)"
        case let .io(path, detail):
            return "cannot access \(path): \(detail)"
        case let .corrupt(path, detail):
            return "\(path) is damaged or not a Touchgate database (\(detail)); restore it from a backup or move it away to start afresh"
        case let .alreadyEnrolled(user, finger):
            return "\(finger) of \(user) is already enrolled on this reader; pass --replace to enroll it again"
        case let .noSpace(directory):
            return "the disk holding \(directory) is full; nothing was changed. Free some space there (or ask "
                + "the administrator to) and try again"
        }
    }
}
