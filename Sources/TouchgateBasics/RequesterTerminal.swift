import CTouchgateSys
#if canImport(Glibc)
import Glibc
#endif

/// The terminal where the person who ran a requesting program reads what it says, and the
/// user it must belong to. Agents run with no terminal of their own (touchgate agent is a
/// daemon), so a wait for a finger is told there, or the screen stays blank while the
/// reader waits.
///
/// Found from `/proc` alone and never trusted for a decision: it only says where to write.
/// Written only when the terminal still belongs to ``owner`` and only without blocking.
public struct RequesterTerminal: Sendable, Equatable, CustomStringConvertible {
    /// The terminal's device (`/dev/pts/3`).
    public let path: String
    /// The real uid of the requesting process: the terminal must be this user's.
    public let owner: UInt32

    public init(path: String, owner: UInt32) {
        self.path = path
        self.owner = owner
    }

    public var description: String { path }

    /// The terminal of `pid`: its standard error's (or input's) terminal, else the nearest
    /// parent's of the same user (`/dev/tty` itself names whoever opens it, so not it). `ssh` leaves standard error on the terminal; git runs
    /// `ssh-keygen -Y sign` with standard error on a pipe it reads, so for `git commit -S`
    /// it is git's terminal. Nil when none of them has one, or `pid` cannot be read.
    public static func of(_ pid: Int32) -> RequesterTerminal? {
        guard let owner = ProcessTable.realUID(of: pid) else { return nil }
        var current = pid
        for _ in 0..<ProcessTable.maximumChain {
            for descriptor in [2, 0] {
                if let target = link("/proc/\(current)/fd/\(descriptor)"),
                   target.hasPrefix("/dev/pts/") || (target.hasPrefix("/dev/tty") && target != "/dev/tty") {
                    return RequesterTerminal(path: target, owner: owner)
                }
            }
            // Only the same user's parents: another user's terminal is not the requester's.
            guard let parent = ProcessTable.parent(of: current), parent > 1,
                  ProcessTable.realUID(of: parent) == owner else { return nil }
            current = parent
        }
        return nil
    }

    /// Shows `message` as one line on the terminal (escaped as ``StoredText/escaped(_:)``
    /// does). Nothing is written when the terminal cannot be opened, is not a terminal, is
    /// not ``owner``'s any more, or would block (a terminal stopped with Ctrl-S keeps its
    /// output: the wait goes on without the line). Returns whether the line was written.
    @discardableResult
    public func tell(_ message: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, info.st_uid == owner,
              isatty(descriptor) == 1 else { return false }
        let bytes = Array((StoredText.escaped(message) + "\r\n").utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                written += count
            } else if count < 0, errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Where the symbolic link at `path` points, nil when it cannot be read.
    private static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
