public import FoundationEssentials
#if canImport(Glibc)
public import Glibc
#endif

/// A listening Unix stream socket: bound by the daemon itself (`--socket PATH`) or
/// handed over by systemd (socket activation, `LISTEN_FDS`).
public final class UnixListener: Sendable {
    /// The listening descriptor.
    public let descriptor: Int32
    /// The path, when the daemon bound it itself (it removes it on ``close()``).
    public let path: String?

    private init(descriptor: Int32, path: String?) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Binds and listens at `path`, readable and writable by everyone (`mode`): callers are
    /// told apart by their credentials, not by who may connect. A stale socket left by a
    /// daemon that died is replaced; a live one, or any other file, is not.
    public static func bind(path: String, mode: mode_t = 0o666) throws -> UnixListener {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw SocketError.system("bind \(path)", ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        try removeStale(path, address: address)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError.system("socket", errno) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
        }
        guard bound == 0, chmod(path, mode) == 0, listen(descriptor, 64) == 0 else {
            let number = errno
            Glibc.close(descriptor)
            throw SocketError.system("bind \(path)", number)
        }
        return UnixListener(descriptor: descriptor, path: path)
    }

    /// Every socket systemd passed (`LISTEN_PID` is this process; descriptors start at 3), in
    /// the order of the unit's `ListenStream=` lines; none when not socket-activated.
    public static func allFromSystemd(environment: [String: String] = ProcessInfo.processInfo.environment) -> [UnixListener] {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 else { return [] }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        return (0..<min(count, 16)).map { offset in
            let descriptor = Int32(3 + offset)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            return UnixListener(descriptor: descriptor, path: nil)
        }
    }

    /// The first socket systemd passed, or nil when the daemon was not socket-activated.
    public static func fromSystemd(environment: [String: String] = ProcessInfo.processInfo.environment) -> UnixListener? {
        allFromSystemd(environment: environment).first
    }

    /// Waits for the next connection; returns its descriptor, or nil once closed.
    public func accept() throws -> Int32? {
        while true {
            // accept4 is not in Swift's Glibc module; the daemon starts no programs, so
            // setting close-on-exec just after is enough.
            let connection = Glibc.accept(descriptor, nil, nil)
            if connection >= 0 {
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                return connection
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO:
                continue
            case EBADF, EINVAL:
                return nil  // closed by ``close()``
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors or memory: wait a little rather than spin.
                usleep(50_000)
                continue
            default:
                throw SocketError.system("accept", errno)
            }
        }
    }

    /// Stops listening (a blocked ``accept()`` returns nil) and removes the socket file
    /// the daemon bound.
    public func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
        if let path { unlink(path) }
    }

    private static func removeStale(_ path: String, address: sockaddr_un) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFSOCK else { throw SocketError.pathInUse(path) }
        // A socket nobody answers on is a leftover; one that answers belongs to a running daemon.
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw SocketError.system("socket", errno) }
        defer { Glibc.close(probe) }
        var target = address
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected != 0 else { throw SocketError.system("bind \(path): another daemon listens there", EADDRINUSE) }
        unlink(path)
    }
}
