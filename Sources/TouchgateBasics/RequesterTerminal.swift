import CTouchgateSys
#if canImport(Glibc)
import Glibc
#endif

/// The terminal where the person who ran a requesting program reads what it says, and the
/// user it must belong to. Helpers and agents run with no terminal of their own (ssh-agent
/// runs `touchgate askpass` with none; touchgate agent is a daemon), so a wait for a finger
/// is told there, or the screen stays blank while the reader waits.
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

    /// The terminal of the clients connected to the server `server` (an ssh-agent, which
    /// runs `touchgate askpass` for `ssh-add -c` keys while a client waits for a signature):
    /// the one terminal that the clients holding the other ends of its connections have
    /// (``clients(of:)``, then ``of(_:)``). Clients without a terminal are passed over; nil
    /// when none has one, or when they have different ones: the request could be any of
    /// theirs, and an unrelated terminal is worse than none.
    public static func ofClients(of server: Int32) -> RequesterTerminal? {
        var found: [RequesterTerminal] = []
        for client in clients(of: server) {
            if let terminal = of(client), !found.contains(terminal) { found.append(terminal) }
        }
        return found.count == 1 ? found[0] : nil
    }

    /// The processes of the same user as `server` that hold the other end of one of its
    /// connected Unix sockets (the kernel names each socket's peer: ``SocketHolders/peer(of:)``),
    /// in pid order; empty when `server` cannot be read or has no connection.
    public static func clients(of server: Int32) -> [Int32] {
        guard let owner = ProcessTable.realUID(of: server), let held = SocketHolders.sockets(of: server) else { return [] }
        let peers = Set(held.values.compactMap(SocketHolders.peer(of:)))
        guard !peers.isEmpty, let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var clients: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name), pid != server, ProcessTable.realUID(of: pid) == owner,
                  let sockets = SocketHolders.sockets(of: pid), sockets.values.contains(where: peers.contains) else { continue }
            clients.append(pid)
        }
        return clients.sorted()
    }

    /// Where a helper run by `parent` (ssh-agent, ssh-add, ssh) tells what it waits for,
    /// when its own standard error is no terminal: for ssh-agent, its clients' terminal
    /// (``ofClients(of:)``), since ssh-agent asks on a client's behalf and has no terminal
    /// itself; for another program, that program's (``of(_:)``). Nil when `parent` is not
    /// this process's user's.
    public static func forHelper(runBy parent: Int32) -> RequesterTerminal? {
        guard parent > 1, ProcessTable.realUID(of: parent) == getuid() else { return nil }
        if let executable = ProcessTable.executable(of: parent),
           executable.split(separator: "/").last == "ssh-agent" {
            return ofClients(of: parent)
        }
        return of(parent)
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
