import Foundation
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// Who asked a helper: the helper's parent process, and that one's parent, as `/proc`
/// shows them (`touchgate askpass for pid 41 /usr/bin/ssh-add (child of pid 40 /usr/bin/bash)`).
public enum HelperRequester {
    /// The requester text for `helper` (`touchgate askpass`), asked by this process's parent;
    /// up to three of its ancestors follow (git runs a helper through a shell and `git`
    /// itself, so the program that wanted the credential is further up).
    public static func describe(helper: String) -> String {
        describe(helper: helper, pid: getppid())
    }

    /// The requester text for `helper` asked by process `parent` (an agent's client, from
    /// its socket's credentials), with up to three of its ancestors.
    static func describe(helper: String, pid parent: pid_t) -> String {
        var ancestors: [String] = []
        var current = parent
        while ancestors.count < 3, let next = parentOf(current), next > 1 {
            ancestors.append(process(next))
            current = next
        }
        return "\(helper) for \(process(parent))"
            + (ancestors.isEmpty ? "" : " (child of " + ancestors.joined(separator: ", child of ") + ")")
    }

    /// `pid N /path/to/exe`, or `pid N (comm)` when the executable cannot be read.
    static func process(_ pid: pid_t) -> String {
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe") {
            return "pid \(pid) \(exe)"
        }
        if let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) {
            return "pid \(pid) (\(comm.trimmingCharacters(in: .whitespacesAndNewlines)))"
        }
        return "pid \(pid)"
    }

    /// The parent of `pid` from `/proc/PID/stat` (the field after the parenthesized name).
    static func parentOf(_ pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1 else { return nil }
        return pid_t(fields[1])
    }
}
