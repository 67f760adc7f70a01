import CTouchgateSys
import TouchgateAPI
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Who is at the other end of a connection, as the kernel recorded it when the peer
/// connected (`SO_PEERCRED`): it cannot be claimed or forged by anything the peer sends.
public struct Peer: Sendable, Equatable, CustomStringConvertible {
    /// The peer's user id.
    public let uid: UInt32
    /// The peer's group id.
    public let gid: UInt32
    /// The peer's process id when it connected.
    public let pid: Int32
    /// The peer's executable (`/proc/PID/exe`), when it could be read (only a process of
    /// the same user, or root, may read another's), else its command name in parentheses
    /// (`/proc/PID/comm`, readable by all). For the audit trail only, never for decisions:
    /// a process can exec something else after connecting.
    public let executable: String?

    /// A peer with these ids.
    public init(uid: UInt32, gid: UInt32, pid: Int32, executable: String?) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.executable = executable
    }

    /// The credentials of the process connected to `socket`; `withExecutable: false`
    /// leaves ``executable`` nil for a caller that names the process otherwise (touchgate
    /// agent, which reads the process chain only for a request that needs it).
    public static func of(socket: Int32, withExecutable: Bool = true) throws -> Peer {
        var uid: UInt32 = 0, gid: UInt32 = 0, pid: Int32 = 0
        let result = CTouchgateSys_peer_credentials(socket, &uid, &gid, &pid)
        guard result == 0 else { throw SocketError.system("SO_PEERCRED", -result) }
        return Peer(uid: uid, gid: gid, pid: pid, executable: withExecutable ? ProcessTable.executable(of: pid) : nil)
    }

    /// Whether the peer is root.
    public var isRoot: Bool { uid == 0 }

    /// The real uid of the peer's process (`/proc/PID/status`), when it can be read. A
    /// set-user-ID root program (sudo, su) runs as root but keeps the real uid of the user
    /// who started it: whose connection it is, for fair shares (never for permissions).
    public func realUID() -> UInt32? {
        ProcessTable.realUID(of: pid)
    }

    public var description: String {
        "uid=\(uid) pid=\(pid)" + (executable.map { " exe=\($0)" } ?? "")
    }
}

/// A failed system call on a socket.
public enum SocketError: Error, Equatable, CustomStringConvertible {
    /// `call` failed with `errno`.
    case system(String, Int32)
    /// The socket path is taken by something that is not a stale socket.
    case pathInUse(String)

    public var description: String {
        switch self {
        case .system(let call, let number):
            return "\(call): \(String(cString: strerror(number)))"
        case .pathInUse(let path):
            return "\(path) exists and is not a stale socket; remove it or choose another path"
        }
    }
}
