import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
import TouchgateClient
import TouchgateHelpers

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
        if let path = Invocation.agentSocket() {
            return DaemonClient(socketPath: path, mode: .personal, requester: caller.requester)
        }
        return requiredHost.personal(for: caller)
    }
}

extension HelperRequests {
    /// The helpers' use cases through the service this process's commands use, for `requester`.
    static func forThisProcess(requester: String) -> HelperRequests {
        HelperRequests(service: ServiceChoice.resolve(requester: requester), requester: requester)
    }
}
