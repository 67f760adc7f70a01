#if canImport(Glibc)
import Glibc
#endif

/// What `/proc` says about another process: its executable and its parents. Read by the
/// doors when a client connects, to say in the audit trail which program asked. Never a
/// ground for a decision on its own: a process can exec something else after connecting.
public enum ProcessTable {
    /// The most ancestors ``chain(above:)`` follows.
    public static let maximumChain = 8

    /// When `pid` started (clock ticks after boot): the 22nd field of `/proc/PID/stat`
    /// (after the command name in parentheses, which may itself hold spaces and parentheses:
    /// the last `)` ends it). With the pid, what names one process: a pid used again is another.
    public static func startTime(of pid: Int32) -> UInt64? {
        let file = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 1024)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
        guard count > 0, let name = bytes[..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // Fields from the state (the 3rd) on, separated by single spaces.
        let fields = bytes[(name + 1)..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 19 else { return nil }
        return UInt64(String(decoding: fields[19], as: UTF8.self))
    }

    /// The executable of `pid` (`/proc/PID/exe`) when it can be read (a process of the same
    /// user, or root, may read another's), else its command name in parentheses
    /// (`/proc/PID/comm`, readable by all, chosen by the process itself: kept printable and
    /// short); nil when the process is gone.
    public static func executable(of pid: Int32) -> String? {
        guard pid > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        if count > 0 {
            return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        guard let command = read("/proc/\(pid)/comm", limit: 64) else { return nil }
        let printable = command.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.prefix(16)
        return "(" + String(String.UnicodeScalarView(printable)) + ")"
    }

    /// The parent of `pid` (`PPid:` in `/proc/PID/status`), nil when it cannot be read or is none.
    public static func parent(of pid: Int32) -> Int32? {
        guard pid > 1, let parent = statusField("PPid:", of: pid).flatMap({ Int32($0) }), parent > 0 else { return nil }
        return parent
    }

    /// The real uid of `pid` (the first number of `Uid:` in `/proc/PID/status`), when it can be
    /// read. A set-user-ID root program (sudo, su) runs as root but keeps the real uid of the
    /// user who started it.
    public static func realUID(of pid: Int32) -> UInt32? {
        guard pid > 0 else { return nil }
        return statusField("Uid:", of: pid).flatMap { UInt32($0) }
    }

    /// The first value of the line `name` of `/proc/PID/status`, over its bytes (measured:
    /// splitting the whole file into lines as `String`s was most of a connection's cost).
    private static func statusField(_ name: String, of pid: Int32) -> Substring? {
        let file = open("/proc/\(pid)/status", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let key = Array(name.utf8)
        var start = 0
        while start < count {
            var end = start
            while end < count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
            if end - start >= key.count, bytes[start..<start + key.count].elementsEqual(key) {
                var from = start + key.count
                while from < end, bytes[from] == UInt8(ascii: "\t") || bytes[from] == UInt8(ascii: " ") { from += 1 }
                var to = from
                while to < end, bytes[to] != UInt8(ascii: "\t"), bytes[to] != UInt8(ascii: " ") { to += 1 }
                return to > from ? Substring(String(decoding: bytes[from..<to], as: UTF8.self)) : nil
            }
            start = end + 1
        }
        return nil
    }

    /// `pid 41 /usr/bin/ssh`, or `pid 41 (comm)` when the executable cannot be read.
    public static func process(_ pid: Int32) -> String {
        "pid \(pid)" + (executable(of: pid).map { " \($0)" } ?? "")
    }

    /// What a door or a helper says of the program it acts for: `touchgate askpass for pid 41
    /// /usr/bin/ssh-add (child of pid 40 /usr/bin/bash)`, with up to three ancestors (git runs
    /// a helper through a shell and `git` itself, so the program that wanted the credential is
    /// further up).
    public static func describe(helper: String, pid: Int32) -> String {
        var ancestors: [String] = []
        var current = pid
        while ancestors.count < 3, let next = parent(of: current), next > 1 {
            ancestors.append(process(next))
            current = next
        }
        return "\(helper) for \(process(pid))"
            + (ancestors.isEmpty ? "" : " (child of " + ancestors.joined(separator: ", child of ") + ")")
    }

    /// The executables of `pid`'s parents, nearest first, up to ``maximumChain`` and
    /// stopping before init (pid 1).
    public static func chain(above pid: Int32) -> [String] {
        var chain: [String] = []
        var current = pid
        while chain.count < maximumChain, let parent = parent(of: current), parent > 1 {
            guard let executable = executable(of: parent) else { break }
            chain.append(executable)
            current = parent
        }
        return chain
    }

    /// Up to `limit` bytes of a small /proc file as UTF-8 text without its final newline.
    private static func read(_ path: String, limit: Int) -> String? {
        guard let bytes = FileInput.read(path, upTo: limit), !bytes.isEmpty else { return nil }
        var text = String(decoding: bytes, as: UTF8.self)
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
