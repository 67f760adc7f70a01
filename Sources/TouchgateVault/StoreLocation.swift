public import FoundationEssentials
#if canImport(Glibc)
import Glibc
import TouchgateBasics
#endif

/// Where Touchgate keeps its data, and the checks that keep it private to its owner.
///
/// The directory is `$XDG_DATA_HOME/touchgate`, or `~/.local/share/touchgate` when
/// `XDG_DATA_HOME` is unset or not absolute (as the XDG Base Directory spec says).
/// It is created with mode 0700; an existing directory or database file that other
/// users can reach, or that another user owns, is refused with ``StoreError/unsafePermissions(path:detail:)``.
public struct StoreLocation: Sendable, Equatable {
    /// The data directory.
    public let directory: URL
    /// Where the audit signing key (`audit-sign.key`) is, when not in ``directory``:
    /// touchgated keeps one for the whole machine in its state directory, so one public
    /// key, registered once, verifies every user's trail there.
    public let signingKeyDirectory: URL?
    /// The SQLite database that holds prints (and, once a vault exists, everything else).
    public let databasePath: String
    /// ``directory``'s path (kept: a long-lived process checks it on every request, and
    /// Foundation builds a URL's path anew each time).
    public let directoryPath: String
    /// ``directory``'s path with `.` and `..` resolved (symbolic links are not): what names
    /// this store among others in a process that keeps several (open stores, held keys).
    public let standardizedPath: String

    /// A location at an explicit directory (tests, `--data-dir`), with its signing key in
    /// `signingKeyDirectory` when given, else in the directory itself.
    public init(directory: URL, signingKeyDirectory: URL? = nil) {
        self.directory = directory
        self.signingKeyDirectory = signingKeyDirectory
        directoryPath = directory.path
        standardizedPath = directory.standardizedFileURL.path
        databasePath = directory.appendingPathComponent("touchgate.sqlite").path
    }

    /// The default location from the environment.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> StoreLocation {
        // The password database always names one.
        let directory = Invocation.personalStoreDirectory({ environment[$0] }, home: { FileManager.default.homeDirectoryForCurrentUser.path })!
        return StoreLocation(directory: URL(fileURLWithPath: directory))
    }

    /// Creates the directory (mode 0700, parents as needed) if it is missing, then checks
    /// that it and every existing database file belong to this user and are private.
    /// Returns what it found, for a caller that stamps the store (``StoreSnapshots``): the
    /// same `lstat`s serve both, since a store kept open is prepared on every request.
    @discardableResult
    public func prepare() throws -> PreparedFiles {
        let path = directoryPath
        var directory = try Self.checkPrivate(path: path, isDirectory: true, mayVanish: true)
        if directory == nil {
            // Parents get the usual 0700 too: ~/.local/share may not exist on a fresh account.
            try PrivateFiles.makeDirectory(path)
            directory = try Self.checkPrivate(path: path, isDirectory: true)
        }
        // Only files that exist are checked. SQLite deletes the WAL side files when the
        // last connection closes, which in touchgated (a store opened by several requests
        // at once) may happen at any moment: gone is as good as private.
        let database = try Self.checkPrivate(path: databasePath, isDirectory: false, mayVanish: true)
        let log = try Self.checkPrivate(path: databasePath + "-wal", isDirectory: false, mayVanish: true)
        try Self.checkPrivate(path: databasePath + "-shm", isDirectory: false, mayVanish: true)
        return PreparedFiles(directory: directory, database: database, log: log)
    }

    /// What ``prepare()`` found: the identities of the directory, the database file and its
    /// write-ahead log (nil when absent), as they were when checked.
    public struct PreparedFiles: Sendable {
        package let directory: FileIdentity?
        package let database: FileIdentity?
        package let log: FileIdentity?
    }

    /// Refuses a path owned by another user, or reachable by group or others.
    /// `mayVanish`: a file that no longer exists passes.
    /// Returns the identity of what it checked (nil for a file that vanished).
    @discardableResult
    static func checkPrivate(path: String, isDirectory: Bool, mayVanish: Bool = false) throws -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if mayVanish && errno == ENOENT { return nil }
            throw StoreError.io(path: path, detail: String(cString: strerror(errno)))
        }
        let kind = info.st_mode & S_IFMT
        guard kind == (isDirectory ? S_IFDIR : S_IFREG) else {
            throw StoreError.unsafePermissions(
                path: path,
                detail: "it is not a \(isDirectory ? "directory" : "regular file") (a symbolic link is not accepted); move it away")
        }
        if info.st_uid != getuid() {
            throw StoreError.unsafePermissions(
                path: path,
                detail: "it belongs to uid \(info.st_uid), not to you (uid \(getuid())); move it away or run as its owner")
        }
        let loose = info.st_mode & 0o077
        if loose != 0 {
            let wanted = isDirectory ? "700" : "600"
            throw StoreError.unsafePermissions(
                path: path,
                detail: "its mode \((info.st_mode & 0o777).zeroPadded(3, radix: 8)) lets other users in; run: chmod \(wanted) '\(path)'")
        }
        return FileIdentity(info)
    }
}
