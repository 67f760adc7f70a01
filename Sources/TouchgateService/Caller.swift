import TouchgateAPI
import TouchgateVault

/// Who asks for a use case: the process at the other end of a door, as the kernel and
/// `/proc` described it when it connected, and which door it came through.
///
/// Hosts build it; nothing a client sends can change it, except ``requester``, which is a
/// helper's claim about the program it acts for and is only ever written to the trail.
/// ``ServiceGate`` decides from it whose service runs a request and whether it may.
public struct Caller: Sendable, Equatable, CustomStringConvertible {
    /// The way a request reached the service.
    public enum Door: String, Sendable, Equatable {
        /// The caller's own process runs the service (the personal mode, the tests).
        case inProcess = "in-process"
        /// touchgated's socket.
        case daemon
        /// The per-user agent's socket (the ssh agent, the Secret Service).
        case agent
    }

    /// The caller's user id (`SO_PEERCRED`).
    public let uid: UInt32
    /// Its login name (`#<uid>` when the password database has none).
    public let loginName: String
    /// Its process id when it connected.
    public let pid: Int32
    /// Its executable, or `(comm)` when that could not be read; for the trail only.
    public let executable: String?
    /// The executables of its parents, nearest first (``ProcessTable/chain(above:)``), for
    /// the trail only: read from `/proc` when asked for (measured: reading it on every
    /// connection was a third of touchgated's time for a one-request connection), unless given.
    public var processChain: [String] { givenChain ?? ProcessTable.chain(above: pid) }
    private let givenChain: [String]?
    /// The door it came through.
    public let door: Door
    /// The program a helper says it acts for (`askpass for pid 41 /usr/bin/ssh-add`): a claim,
    /// written to the trail beside what the door verified.
    public var requester: String?
    /// Whether the host found, for the request at hand, that the caller runs touchgate agent's
    /// own program (``AgentProgram``): only then is what it says of another program its word.
    public var isVerifiedAgent = false

    /// A caller with these facts.
    public init(uid: UInt32, loginName: String, pid: Int32, executable: String?, processChain: [String]? = nil,
                door: Door, requester: String? = nil) {
        self.uid = uid
        self.loginName = loginName
        self.pid = pid
        self.executable = executable
        givenChain = processChain
        self.door = door
        self.requester = requester
    }

    /// A caller as a door sees it when it connects (its parents are read when asked for).
    public static func connected(uid: UInt32, pid: Int32, executable: String?, door: Door) -> Caller {
        Caller(uid: uid, loginName: UserDatabase.loginName(of: uid), pid: pid, executable: executable, door: door)
    }

    /// Whether the caller is root, who may act for other users and run root-only operations.
    public var isRoot: Bool { uid == 0 }

    /// The principal the caller is when it acts for itself.
    public var principal: Principal { Principal(uid: uid, loginName: loginName) }

    /// How the trail names the caller: who, and which process asked.
    var auditClient: AuditClient {
        AuditClient(uid: uid, loginName: loginName,
                    process: "pid \(pid)" + (executable.map { " \($0)" } ?? ""))
    }

    /// `uid=1000 pid=41 exe=/usr/bin/touchgate`, for the host's log.
    public var description: String {
        "uid=\(uid) pid=\(pid)" + (executable.map { " exe=\($0)" } ?? "")
    }
}
