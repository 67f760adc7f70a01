import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
import TouchgateClient
import TouchgateHelpers
#if canImport(Glibc)
import Glibc
#endif

/// Which mode serves this process's command, decided once before any command runs
/// (``Invocation/daemonSocket()``): touchgated through ``DaemonClient`` when its socket is
/// there or named, else the host's in-process service (the personal mode).
enum ServiceChoice {
    /// Where touchgated listens when installed.
    static let systemSocket = Invocation.systemSocket

    /// The host of this process, set by ``CommandLineEntry/run(host:)`` before any command
    /// runs and never changed afterwards (hence `nonisolated(unsafe)`).
    nonisolated(unsafe) static var host: (any CommandHost)?

    /// The host, or (in `touchgate-client`, which has none) this process replaced by
    /// `touchgate-cli` with the same arguments; nothing has been written or asked before
    /// a command gets here.
    static var requiredHost: any CommandHost {
        if let host { return host }
        SiblingProgram.fullCLI.exec(CommandLine.arguments)
    }

    /// The service for this process's commands, naming `requester` (what a helper says it
    /// acts for) with every request.
    static func resolve(requester: String? = nil) -> any TouchgateRequests {
        resolve(for: .thisProcess(requester: requester))
    }

    /// The service for `caller`, found by a door of this process: touchgated's or the
    /// agent's client (which pass on what the door says of the caller as its requester), or
    /// the host's gate in front of the service in this process.
    static func resolve(for caller: Caller) -> any TouchgateRequests {
        if let path = Invocation.daemonSocket() { return DaemonClient(socketPath: path, requester: caller.requester) }
        // touchgate agent hosts the personal store, with the unlocked key in its memory.
        if let path = personalAgentSocket {
            return DaemonClient(socketPath: path, mode: .personal, requester: caller.requester)
        }
        return requiredHost.personal(for: caller)
    }

    /// touchgate agent's socket for this process's personal store, decided once: an agent
    /// that hosts it (started by the user's systemd through its socket, by `agent --launch`,
    /// or by an earlier command), else one this command starts where
    /// ``Invocation/agentSocketToStart()`` allows, as gpg starts gpg-agent: so personal mode
    /// keeps its store open and its key out of the keyring without any setup. Nil: in-process.
    static let personalAgentSocket: String? = Invocation.agentSocket() ?? startAgent()

    /// Starts touchgate agent for this user's default store and waits (at most five seconds)
    /// until it answers for it; nil, and the command runs in-process as before, when it may
    /// not start one, or the agent did not come up (its log says why).
    ///
    /// Blocking: it runs once, when the first request of a command is made, with nothing else
    /// under way in the process.
    private static func startAgent() -> String? {
        guard host != nil, let socket = Invocation.agentSocketToStart(), !Invocation.isListening(socket) else { return nil }
        let directory = PathText.deletingLastComponent(of: socket)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return nil }
        var status = stat()
        guard lstat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == getuid(),
              status.st_mode & 0o077 == 0 else { return nil }
        guard let started = try? Agent.spawnDetached([], logDirectory: directory) else { return nil }
        for _ in 0..<250 {
            if Invocation.isListening(socket) {
                return Invocation.agentHostsThisStore(at: socket) ? socket : nil
            }
            var exited: Int32 = 0
            if waitpid(started.pid, &exited, WNOHANG) == started.pid { return nil }
            usleep(20_000)
        }
        return nil
    }
}

extension HelperRequests {
    /// The helpers' use cases through the service this process's commands use, for `requester`.
    static func forThisProcess(requester: String) -> HelperRequests {
        HelperRequests(service: ServiceChoice.resolve(requester: requester), requester: requester)
    }
}
