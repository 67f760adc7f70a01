public import TouchgateAPI
import FoundationEssentials
import Synchronization
import TouchgateBasics
import TouchgateFIDO
import TouchgateSocket
#if canImport(Glibc)
import Glibc
#endif

/// The authenticator on a Unix socket of type SOCK_SEQPACKET, each message one 64-byte
/// report: what the tests drive with python-fido2 and libfido2 (through their transport
/// hooks), and what a tool may use where `/dev/uhid` is not there. Each connection is a
/// device of its own, served for the process at its other end, as the kernel names it;
/// only the socket's owner is served.
public final class PasskeySocketServer: Sendable {
    public let path: String
    private let descriptor: Int32
    private let requests: RequestsForCaller
    private let interaction: @Sendable (Caller) -> PasskeyPrompts
    private let log: @Sendable (String) -> Void
    private let policy: String?
    private let connections = Mutex(0)
    private let stopping = Atomic(false)
    /// Devices open at once.
    static let maximumConnections = 16

    public init(path: String, requests: @escaping RequestsForCaller, interaction: @escaping @Sendable (Caller) -> PasskeyPrompts,
                policy: String? = nil, log: @escaping @Sendable (String) -> Void) throws(ServiceError) {
        self.path = path
        self.policy = policy
        self.requests = requests
        self.interaction = interaction
        self.log = log
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ServiceError(.usage, "the socket path \(path) is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ServiceError(.error, "cannot make a socket: \(String(cString: strerror(errno)))") }
        // A live authenticator keeps its socket; one a stopped server left behind is replaced.
        let probe = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let live = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
        close(probe)
        if live {
            close(descriptor)
            throw ServiceError(.alreadyExists, "an authenticator already listens at \(path); stop it first")
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFSOCK else {
                close(descriptor)
                throw ServiceError(.usage, "\(path) exists and is not a socket; nothing was replaced")
            }
            unlink(path)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, listen(descriptor, 16) == 0 else {
            let problem = String(cString: strerror(errno))
            close(descriptor)
            throw ServiceError(.usage, "cannot listen at \(path): \(problem)")
        }
        self.descriptor = descriptor
    }

    /// Serves until ``stop()``.
    public func run() async {
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            SystemThread.detach(name: "touchgate-passkeys") {
                self.acceptClients()
                stopped.resume()
            }
        }
    }

    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        unlink(path)
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    private func acceptClients() {
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let client = Glibc.accept(descriptor, nil, nil)
            if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            // The socket is its owner's (mode 0600); the kernel's word on who connected is checked all the same.
            guard let peer = try? Peer.of(socket: client, withExecutable: true), peer.uid == getuid() else {
                close(client)
                log("refused a connection to the passkey authenticator from another user")
                continue
            }
            let admitted = connections.withLock { count in
                guard count < Self.maximumConnections else { return false }
                count += 1
                return true
            }
            guard admitted else {
                close(client)
                log("refused a connection to the passkey authenticator: \(Self.maximumConnections) are open")
                continue
            }
            let caller = Caller.connected(uid: peer.uid, gid: peer.gid, pid: peer.pid, executable: peer.executable,
                                          door: .passkey,
                                          requester: "passkey authenticator for pid \(peer.pid)"
                                              + (peer.executable.map { " \($0)" } ?? ""),
                                          handle: ProcessHandle.peer(of: client, pid: peer.pid))
            let authenticator = PasskeyAuthenticator(requests: requests(caller), interaction: interaction(caller), policy: policy,
                                                     log: log)
            let server = CTAPHIDServer(channel: SocketReports(descriptor: client), authenticator: authenticator)
            SystemThread.detach(name: "touchgate-passkey") {
                server.serve()
                close(client)
                self.connections.withLock { $0 -= 1 }
            }
        }
        close(descriptor)
        unlink(path)
    }
}

/// One connection's reports.
struct SocketReports: ReportChannel {
    let descriptor: Int32

    func read() -> [UInt8]? {
        let size = CTAPHID.reportSize
        var report = [UInt8](repeating: 0, count: size)
        while true {
            let count = recv(descriptor, &report, report.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            // A short message is padded, as a HID report of fewer bytes would be.
            return count == size ? report : Array(report[..<count]) + [UInt8](repeating: 0, count: size - count)
        }
    }

    func write(_ report: [UInt8]) {
        _ = report.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
