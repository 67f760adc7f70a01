import Foundation
import TouchgateAPI
import TouchgateTerminal
import TouchgateClient

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

    static func resolve() -> any TouchgateRequests {
        if let path = Invocation.daemonSocket() { return DaemonClient(socketPath: path) }
        // touchgate agent hosts the personal store, with the unlocked key in its memory.
        if let path = Invocation.agentSocket() { return DaemonClient(socketPath: path, mode: .personal) }
        return requiredHost.personal()
    }
}
