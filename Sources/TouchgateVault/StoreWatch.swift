import CTouchgateSys
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells with one read whether anything in a store's directory changed: a write to the
/// database, its log or a key file, a change of mode or owner, a file made, removed or
/// renamed (inotify), or the directory itself replaced at its path (one `lstat`).
///
/// Hand-written for a measurement: checking a kept SSH key listing file by file (eleven
/// `lstat`s and SQLite's `data_version`) put `ssh-add -L` through touchgate agent at 1.05×
/// OpenSSH's agent; nearly all of that was the check, run on a cold cache between logins.
final class StoreWatch: Sendable {
    private let descriptor: Int32
    private let directoryPath: String
    private let directory: FileIdentity
    private let changes = Mutex<UInt64>(0)

    /// A watch on `directoryPath`; nil when inotify cannot watch it (no such directory, or
    /// the user's inotify limits reached): then nothing is taken as unchanged.
    init?(directoryPath: String) {
        // The identity first: a directory replaced before the watch begins is then seen
        // as a change at the first count.
        guard let identity = FileIdentity(path: directoryPath) else { return nil }
        let watch = directoryPath.withCString { CTouchgateSys_watch_directory($0) }
        guard watch >= 0 else { return nil }
        descriptor = watch
        self.directoryPath = directoryPath
        directory = identity
    }

    /// How many times the directory has been seen changed: two equal counts mean that
    /// nothing in it changed between them. Any doubt (an error, the queue overflowed, the
    /// path now naming another directory) counts as a change.
    func count() -> UInt64 {
        changes.withLock { count in
            if CTouchgateSys_watch_drain(descriptor) != 0 {
                count += 1
            } else if FileIdentity(path: directoryPath).map({ $0.isSameFile(as: directory) }) != true {
                count += 1
            }
            return count
        }
    }

    deinit {
        close(descriptor)
    }
}
