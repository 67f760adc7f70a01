public import FoundationEssentials
#if canImport(Glibc)
public import Glibc
#endif
import TouchgateBasics

/// What touchgated checks of its state directory before it serves anyone: the directory,
/// its `users/` directory, every user's store directory and every file in them belong to
/// the daemon's own uid and let no group or other user in, and none is a symbolic link.
///
/// A store loosened afterwards is refused when a request opens it (the store's own check,
/// ``TouchgateVault/StoreLocation/checkPrivate()``); this catches at start what an
/// administrator's `chmod -R` or a restored backup left behind, before any request, and says
/// what to run.
public enum StateDirectoryCheck {
    /// How deep the walk goes: the state directory, `users/`, `users/<uid>/`, and their files.
    static let depth = 3

    /// The problems found in `directory`, one sentence each with the command that fixes it;
    /// empty when all is private to `uid` (the daemon's effective uid by default). A
    /// directory that does not exist yet is no problem (the daemon creates it 0700).
    public static func problems(in directory: URL, uid: uid_t = geteuid()) -> [String] {
        var problems: [String] = []
        check(directory.path, uid: uid, level: 0, into: &problems)
        return problems
    }

    private static func check(_ path: String, uid: uid_t, level: Int, into problems: inout [String]) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno != ENOENT || level > 0 {
                problems.append("cannot examine \(path): \(String(cString: strerror(errno)))")
            }
            return
        }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFLNK {
            problems.append("\(path) is a symbolic link, which touchgated does not follow into its state; "
                            + "replace it with the directory or file itself")
            return
        }
        let isDirectory = kind == S_IFDIR
        if info.st_uid != uid {
            problems.append("\(path) belongs to uid \(info.st_uid), not to touchgated's uid \(uid) "
                            + "(\(userName(uid))); run: chown -R \(userName(uid)): '\(path)'")
        }
        if info.st_mode & 0o077 != 0 {
            let wanted = isDirectory ? "0700" : "0600"
            problems.append("\(path) has mode \((info.st_mode & 0o7777).zeroPadded(4, radix: 8)), which lets other users in; "
                            + "run: chmod \(wanted) '\(path)'"
                            + (isDirectory ? " (and chmod -R go-rwx '\(path)' for what it holds)" : ""))
        }
        guard isDirectory, level < depth,
              let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for entry in entries.sorted() {
            check(path + "/" + entry, uid: uid, level: level + 1, into: &problems)
        }
    }

    /// The login name of `uid`, or `#uid`.
    private static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "#\(uid)" }
        return String(cString: name)
    }
}
