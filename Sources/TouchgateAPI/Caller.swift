#if canImport(Glibc)
import Glibc
#endif

/// Who asks for a use case: the process at the other end of a door, as the kernel (and the
/// bus, for the Secret Service) described it, and which door it came through.
///
/// Built by the door from kernel facts, never from anything a client sends, and handed with
/// each request to the service's gate (`ServiceGate`), which decides from it whose service
/// runs the request and whether it may, and names it in every record the request writes.
/// A request may add only ``requester``: a helper's claim about the program it acts for,
/// written to the trail beside what the door verified.
public struct Caller: Sendable, Equatable, CustomStringConvertible {
    /// The way a request reached the service.
    public enum Door: String, Sendable, Equatable, CaseIterable {
        /// The command itself: the caller's own process runs the service (the personal mode).
        case inProcess = "in-process"
        /// touchgated's socket: the CLI, the PAM module, an agent forwarding its doors.
        case daemon
        /// touchgate agent's socket for the commands (the personal mode's host).
        case agent
        /// touchgate agent's SSH agent socket: ssh, ssh-add, ssh-keygen, the security-key provider.
        case ssh
        /// The Secret Service on the session bus (`org.freedesktop.secrets`).
        case secretService = "secret-service"
        /// The passkey authenticator (CTAP 2.1 over CTAPHID): the browser or FIDO tool that
        /// opened its device or socket.
        case passkey

        /// How a record names the door: `at touchgated's socket`.
        public var words: String {
            switch self {
            case .inProcess: "in-process"
            case .daemon: "at touchgated's socket"
            case .agent: "at touchgate agent's socket"
            case .ssh: "at touchgate agent's SSH socket"
            case .secretService: "on the Secret Service"
            case .passkey: "at the passkey authenticator"
            }
        }

        /// Whether the door is a socket other processes connect to, whose callers the
        /// operations' contracts admit (``OperationContract/callers``); the others are the
        /// host's own code, whose callers the contracts do not restrict.
        public var isSocket: Bool { self == .daemon || self == .agent }
    }

    /// The caller's user id (`SO_PEERCRED`, or the bus's word for its connection).
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
    public var processChain: [String] {
        if let givenChain { return givenChain }
        guard let handle else { return ProcessTable.chain(above: pid) }
        return handle.whileRunning(ProcessTable.chain(above:)) ?? ["(it exited before its parents were read)"]
    }
    private let givenChain: [String]?
    /// The real uid of its process (`/proc/PID/status`), read when asked for and kept only if
    /// the process still ran after it was read; nil when it cannot be read. A set-user-ID root
    /// program (su, polkit's agent helper) connects as root, ``uid`` 0, but keeps the real uid
    /// of the user who started it.
    public var realUID: UInt32? {
        if let givenRealUID { return givenRealUID }
        guard let handle else { return ProcessTable.realUID(of: pid) }
        return handle.whileRunning(ProcessTable.realUID(of:)) ?? nil
    }
    private let givenRealUID: UInt32?
    /// The door it came through.
    public let door: Door
    /// What the door says of the program it serves beyond the process (`touchgate agent for
    /// pid 41 /usr/bin/ssh …`, `secret service for pid 77 /usr/bin/secret-tool …`), or a
    /// helper's claim sent with a request: written to the trail beside what the door verified.
    public var requester: String?
    /// Its group id when it connected (`SO_PEERCRED`), where the door has one.
    public var gid: UInt32?
    /// The process itself, held by a pidfd from the moment the door took the connection
    /// (``ProcessHandle``), where the door has one: what is read of ``pid`` later (its
    /// parents, its session) is of this process, or not kept.
    public var handle: (any HeldProcess)?
    /// Whether the host found that the caller runs touchgate agent's own program (the
    /// group the kernel recorded for its connection, ``AgentGroup``): only then is what it
    /// says of another program its word.
    public var isVerifiedAgent = false

    /// A caller with these facts.
    public init(uid: UInt32, loginName: String, pid: Int32, executable: String?, processChain: [String]? = nil,
                realUID: UInt32? = nil, door: Door, requester: String? = nil) {
        self.uid = uid
        self.loginName = loginName
        self.pid = pid
        self.executable = executable
        givenChain = processChain
        givenRealUID = realUID
        self.door = door
        self.requester = requester
    }

    /// A caller as a door sees it when it connects (its parents are read when asked for).
    public static func connected(uid: UInt32, gid: UInt32? = nil, pid: Int32, executable: String?, door: Door,
                                 requester: String? = nil, handle: (any HeldProcess)? = nil) -> Caller {
        var caller = Caller(uid: uid, loginName: UserDatabase.loginName(of: uid), pid: pid, executable: executable,
                            door: door, requester: requester)
        caller.gid = gid
        caller.handle = handle
        return caller
    }

    /// Its login session and seat (``LoginSession``), read when asked for and kept only if
    /// the process still ran after it was read; nil when it is in none, or is gone.
    public var session: LoginSession? {
        guard let handle else { return LoginSession.of(pid) }
        return handle.whileRunning { LoginSession.of($0) } ?? nil
    }

    /// Whether the process that asked is gone, so that nothing more can be read of it by pid
    /// (false where the door holds no pidfd of it).
    public var hasExited: Bool { handle.map { !$0.isRunning } ?? false }

    /// This process, asking the service it hosts itself (the personal mode's commands).
    public static func thisProcess(requester: String? = nil) -> Caller {
        let pid = getpid()
        return connected(uid: UInt32(getuid()), gid: UInt32(getgid()), pid: pid, executable: ProcessTable.executable(of: pid),
                         door: .inProcess, requester: requester)
    }

    /// Whether the caller is root, who may act for other users and run root-only operations.
    public var isRoot: Bool { uid == 0 }

    /// `pid 41 /usr/bin/ssh at touchgate agent's SSH socket`: which process asked, and how.
    public var process: String {
        "pid \(pid)" + (executable.map { " \($0)" } ?? "") + " " + door.words
    }

    /// `uid=1000 pid=41 exe=/usr/bin/touchgate door=daemon`, for the host's log.
    public var description: String {
        "uid=\(uid) pid=\(pid)" + (executable.map { " exe=\($0)" } ?? "") + " door=\(door.rawValue)"
    }

    public static func == (lhs: Caller, rhs: Caller) -> Bool {
        lhs.uid == rhs.uid && lhs.gid == rhs.gid && lhs.pid == rhs.pid && lhs.executable == rhs.executable
            && lhs.door == rhs.door && lhs.requester == rhs.requester && lhs.isVerifiedAgent == rhs.isVerifiedAgent
            && lhs.handle === rhs.handle
    }
}

/// The service as a door reaches it for one caller: the host's gate in front of its
/// service (`GatedRequests`), or touchgated's client, told what the door found of the caller.
public typealias RequestsForCaller = @Sendable (Caller) -> any TouchgateRequests
