import CTouchgateSys
#if canImport(Glibc)
import Glibc
#endif

/// A program started to outlive the process that starts it (`touchgate agent --launch`):
/// a session of its own, nothing of the starter's terminal.
public enum DetachedProcess {
    /// Starts `path` with `arguments` (the first is its name), standard error on
    /// `logDescriptor` (/dev/null when -1). The pid, or minus the `errno` of the failure.
    public static func spawn(_ path: String, _ arguments: [String], logDescriptor: Int32) -> Int32 {
        let pointers = ([path] + arguments).map { strdup($0) }
        defer { pointers.forEach { free($0) } }
        return CTouchgateSys_spawn_detached(pointers[0], Array(pointers.dropFirst()) + [nil], logDescriptor)
    }
}
