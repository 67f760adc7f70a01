import Foundation
import TouchgateClient
import TouchgateService
import TouchgateAPI

/// Which mode serves this command.
///
/// `TOUCHGATE_SOCKET=PATH` names the daemon's socket (`TOUCHGATE_SOCKET=` with nothing
/// forces the personal mode); without it, the system daemon's socket is used when it
/// exists. The choice is made once per process, before any command runs.
enum ServiceChoice {
    /// Where touchgated listens when installed.
    static let systemSocket = Invocation.systemSocket

    static func resolve(environment: [String: String] = ProcessInfo.processInfo.environment) -> any TouchgateRequests {
        if let path = environment[Invocation.socketVariable] {
            return path.isEmpty ? TouchgateService.personal() : DaemonClient(socketPath: path)
        }
        var status = stat()
        if lstat(systemSocket, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK {
            return DaemonClient(socketPath: systemSocket)
        }
        return TouchgateService.personal()
    }
}
