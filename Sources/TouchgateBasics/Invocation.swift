#if canImport(Glibc)
import Glibc
#endif

/// How `touchgate` is started and where it looks for the daemon: shared by the thin
/// `touchgate` front and the full `touchgate-cli`, so both decide the same way.
public enum Invocation {
    /// Where touchgated listens when installed. `TOUCHGATE_SOCKET=PATH` names another
    /// socket; `TOUCHGATE_SOCKET=` (empty) forces the personal (in-process) mode.
    public static let systemSocket = "/run/touchgate/socket"

    /// The environment variable naming the daemon's socket.
    public static let socketVariable = "TOUCHGATE_SOCKET"

    /// There while touchgated.socket is enabled (`systemctl enable`), whether or not it runs.
    public static let enabledMarker = "/etc/systemd/system/sockets.target.wants/touchgated.socket"

    /// The daemon's socket this process uses, or nil for the personal mode: the one
    /// `TOUCHGATE_SOCKET` names (nil when it is empty), else ``systemSocket`` when a socket
    /// is there, or when touchgated is enabled here (``enabledMarker``) but stopped: its
    /// socket is gone then, and the person's vault is in its store, so the request goes
    /// there and fails saying the daemon is stopped, instead of an empty personal store
    /// answering "no vault yet". Every executable decides with this, once, before any
    /// command runs.
    public static func daemonSocket() -> String? {
        if let named = getenv(socketVariable) {
            let path = String(cString: named)
            return path.isEmpty ? nil : path
        }
        var status = stat()
        if lstat(systemSocket, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK { return systemSocket }
        return lstat(enabledMarker, &status) == 0 ? systemSocket : nil
    }

    /// The personal mode's store directory: `$XDG_DATA_HOME/touchgate` when that is an
    /// absolute path, else `~/.local/share/touchgate` (`home` when HOME is unset); nil
    /// when neither names a home.
    public static func personalStoreDirectory(_ variable: (String) -> String?, home: () -> String?) -> String? {
        if let data = variable("XDG_DATA_HOME"), data.hasPrefix("/") { return data + "/touchgate" }
        guard let home = variable("HOME") ?? home() else { return nil }
        return home + "/.local/share/touchgate"
    }

    /// This user's personal store's database when one is there (the same directory as
    /// ``personalStoreDirectory(_:home:)``, HOME unset meaning none), else nil.
    public static func personalDatabase() -> String? {
        guard let directory = personalStoreDirectory(environment, home: { nil }) else { return nil }
        var status = stat()
        let path = directory + "/touchgate.sqlite"
        return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG ? path : nil
    }

    /// Where touchgate agent serves the personal store in the user's runtime directory.
    public static func agentServiceSocket() -> String? {
        guard let runtime = environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") else { return nil }
        return runtime + "/touchgate/socket"
    }

    /// touchgate agent's service socket when the agent listens there and nothing else was
    /// chosen (no `TOUCHGATE_SOCKET`, no touchgated): it holds the unlocked vault key in
    /// its own memory, so the personal mode's commands go to it. Checked by connecting, so
    /// a socket file left by an agent that was killed sends nothing there.
    ///
    /// Only when the agent hosts this process's store: its hello names the store's directory
    /// (``storeIdentity(of:)``), and a shell whose `XDG_DATA_HOME` points elsewhere (a demo's
    /// throwaway directory, a second store) than the agent's keeps its commands in-process
    /// rather than reaching another store. Decided once per process: the front, the client
    /// and the command all ask.
    public static func agentSocket() -> String? { decidedAgentSocket }

    private static let decidedAgentSocket: String? = {
        guard getenv(socketVariable) == nil, daemonSocket() == nil, let path = agentServiceSocket() else { return nil }
        return agentHostsThisStore(at: path) ? path : nil
    }()

    /// Whether touchgate agent listens at `path` (a socket of this user's) and hosts the
    /// store of this process's data directory, as its hello says. Asked anew on each call.
    ///
    /// Read from the record the agent keeps beside its socket (``storeRecord(of:)``) when
    /// there is one, whose agent still runs (its pid and start time): no connection, which
    /// would cost a command through the agent a millisecond of the agent's work. Without a
    /// record (systemd holds the socket, and the agent starts at this connection), or with one
    /// of an agent that is gone, from the agent's hello.
    public static func agentHostsThisStore(at path: String) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK, status.st_uid == getuid() else { return false }
        if let recorded = recordedStore(beside: path)?.split(separator: " "), recorded.count == 3,
           let pid = Int32(recorded[1]), let started = UInt64(recorded[2].prefix { $0 != "\n" }),
           ProcessTable.startTime(of: pid) == started {
            return String(recorded[0]) == thisStoreIdentity()
        }
        // The hello first: a socket-activated agent makes its store's directory before it.
        guard let hello = firstLine(from: path), let mine = thisStoreIdentity() else { return false }
        return hello.contains("\"\(storeField)\":\"\(mine)\"")
    }

    /// What touchgate agent records beside its socket: the store it hosts, its pid and its
    /// start time (``agentHostsThisStore(at:)``); nil when this process's store has no directory.
    public static func storeRecordContents() -> String? {
        let pid = getpid()
        guard let identity = thisStoreIdentity(), let started = ProcessTable.startTime(of: pid) else { return nil }
        return "\(identity) \(pid) \(started)\n"
    }

    /// ``storeIdentity(of:)`` of this process's personal data directory.
    public static func thisStoreIdentity() -> String? {
        personalStoreDirectory(environment, home: { nil }).flatMap(storeIdentity(of:))
    }

    /// Where touchgate agent serving at `socket` records the store it hosts
    /// (``storeRecordContents()``), for as long as it runs.
    public static func storeRecord(of socket: String) -> String { socket + ".store" }

    /// What the record beside the agent's socket at `socket` holds (``storeRecord(of:)``,
    /// a small regular file of this user's: at most 256 bytes read), or nil.
    public static func recordedStore(beside socket: String) -> String? {
        let descriptor = open(storeRecord(of: socket), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid() else { return nil }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Where the commands themselves may start touchgate agent for this process (nothing
    /// listens at ``agentServiceSocket()``, no systemd started one): the service socket, when
    /// nothing else was chosen (no `TOUCHGATE_SOCKET`, not even empty; no touchgated), the
    /// runtime directory is this user's own (a login session's, mode 0700), and the data
    /// directory is the default one (`XDG_DATA_HOME` unset, or `~/.local/share`): a shell
    /// pointing at another store (a throwaway demo, a test) keeps the in-process mode rather
    /// than leaving an agent behind for it. Nil otherwise.
    public static func agentSocketToStart() -> String? {
        guard getenv(socketVariable) == nil, daemonSocket() == nil, let path = agentServiceSocket(),
              let runtime = environment("XDG_RUNTIME_DIR"), let home = environment("HOME"), home.hasPrefix("/") else { return nil }
        var status = stat()
        guard lstat(runtime, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == getuid(),
              status.st_mode & 0o077 == 0 else { return nil }
        if let data = environment("XDG_DATA_HOME"), data.hasPrefix("/"),
           data.split(separator: "/") != (home + "/.local/share").split(separator: "/") { return nil }
        return path
    }

    /// The hello's field that names the store touchgate agent hosts.
    public static let storeField = "store"

    /// What names the store in `directory` in touchgate agent's hello: the directory's device
    /// and inode (`DEV:INO`), so that two spellings of one path (a symbolic link, `..`) are
    /// one store and a directory deleted and made again is another; nil when it is not there.
    public static func storeIdentity(of directory: String) -> String? {
        var status = stat()
        guard stat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return nil }
        return "\(status.st_dev):\(status.st_ino)"
    }

    /// The first line the Unix socket at `path` sends (without its newline), waiting at most
    /// five seconds (an agent systemd starts at this connection first loads its store); nil
    /// when nothing listens or no line came.
    static func firstLine(from path: String) -> String? {
        guard let descriptor = connected(path) else { return nil }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while line.count < 4096 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            if let newline = buffer[..<count].firstIndex(of: 0x0A) {
                return String(decoding: line + buffer[..<newline], as: UTF8.self)
            }
            line += buffer[..<count]
        }
        return nil
    }

    /// Whether something accepts connections on the Unix socket at `path` now (a socket
    /// file left by a process that was killed does not).
    public static func isListening(_ path: String) -> Bool {
        guard let descriptor = connected(path) else { return false }
        close(descriptor)
        return true
    }

    /// A descriptor connected to the Unix socket at `path`, or nil.
    private static func connected(_ path: String) -> Int32? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(descriptor)
            return nil
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// The socket this process's commands go to: touchgated's (``daemonSocket()``), else
    /// touchgate agent's (``agentSocket()``), else nil for the in-process personal mode.
    public static func serviceSocket() -> String? {
        daemonSocket() ?? agentSocket()
    }

    /// The environment variable `name` of this process now, or nil.
    ///
    /// `getenv`, not `ProcessInfo.environment`, which copies the whole environment into a
    /// dictionary on every call (measured: a sixth of touchgated's time per `status` went to
    /// two such reads).
    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The arguments that stand before the command line of touchgate run under a helper's
    /// name (a symlink): git runs `git-credential-touchgate OPERATION`, gpg-agent runs
    /// `pinentry-touchgate [--display …]`, and an SSH_ASKPASS may be `touchgate-askpass PROMPT`.
    /// Nil for any other name.
    /// `--help`, `-h` or `--version` alone asks about the helper itself, not a prompt or an
    /// operation named so: those are answered by the helper's command without its default
    /// subcommand (`touchgate-askpass --help` is `touchgate askpass --help`).
    public static func helperPrefix(programName: String, arguments: [String] = []) -> [String]? {
        let asksAboutItself = arguments.count == 1 && ["--help", "-h", "--version"].contains(arguments[0])
        switch programName {
        case "git-credential-touchgate": return ["git-credential"]
        case "pinentry-touchgate": return asksAboutItself ? ["pinentry"] : ["pinentry", "serve"]
        case "touchgate-askpass": return asksAboutItself ? ["askpass"] : ["askpass", "ask"]
        default: return nil
        }
    }

    /// The last component of a path (`/usr/bin/touchgate` → `touchgate`).
    public static func programName(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    }
}

/// The lines the CLI shows people, in one place for both binaries.
public enum TerminalText {
    /// The standard-error line for an event, or nil when it shows none (a passphrase
    /// prompt says it itself).
    public static func line(for kind: InteractionEvent.Kind, message: String) -> String? {
        switch kind {
        case .passphraseNeeded, .touchEnded: nil
        case .enrollStage, .retry: "  " + message
        default: message
        }
    }

    /// A failure, as shown on standard error.
    public static func failure(_ message: String) -> String { "touchgate: \(message)" }

    /// `touchgate verify`'s line for a match.
    public static func verified(user: String?, finger: String?) -> String {
        StoredText.escaped("match: \(finger ?? "?") of \(user ?? "?")")
    }

    /// The line for a no-match of verify, identify or a release.
    public static func noMatch(attemptsLeft: Int?) -> String {
        "no match" + (attemptsLeft.map { " (\($0) more before a lockout)" } ?? "")
    }
}
