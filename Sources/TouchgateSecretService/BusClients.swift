import Foundation
import TouchgateAPI
import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// Who is behind a unique bus name: the uid and pid the bus daemon took from the
/// connection's socket (`SO_PEERCRED` when it connected), and the executable and parents of
/// that pid now, from /proc.
///
/// What this proves, and what not (README, "Secret Service"): the bus vouches for the uid
/// and pid; the executable is what that pid runs when first asked. A process of the same
/// user can still act through another (ptrace, LD_PRELOAD, a debugger, or by exec'ing an
/// approved program with its own input), so an approval binds a program's path, not its
/// intentions; the touch that names the program is what an attacker cannot give.
actor BusClients {
    struct Client: Sendable {
        let uid: UInt32
        let pid: UInt32
        let identity: ApplicationIdentity
    }

    private let bus: BusConnection
    private var known: [String: Client] = [:]
    /// The most clients remembered at once; the oldest are forgotten past it (they are asked
    /// again, from the bus, when they call).
    private static let maximumKnown = 1024

    init(bus: BusConnection) {
        self.bus = bus
    }

    /// The client behind `sender`.
    /// - Throws: `AccessDenied` for another user's process, `Failed` when the bus does not say.
    func client(_ sender: String) throws(SecretServiceError) -> Client {
        if let client = known[sender] { return client }
        // One call for both (GetConnectionCredentials, D-Bus 1.10 and later): a client's
        // first call waits for it.
        let uid: UInt32, pid: UInt32
        do {
            guard let credentials = try bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                 "GetConnectionCredentials", [.string(sender)]).first?.properties,
                  case .uint32(let u)? = credentials["UnixUserID"], case .uint32(let p)? = credentials["ProcessID"] else {
                throw SecretServiceError.failed("the bus did not say who \(sender) is")
            }
            (uid, pid) = (u, p)
        } catch let error as SecretServiceError {
            throw error
        } catch {
            throw .failed("the bus did not say who \(sender) is: \(error)")
        }
        guard uid == getuid() else {
            throw .accessDenied("this Secret Service serves its own user only (uid \(getuid())), not uid \(uid)")
        }
        let executable = ProcessTable.executable(of: Int32(bitPattern: pid)) ?? "unknown"
        let parents = ProcessTable.chain(above: Int32(bitPattern: pid))
        let chain = (["pid \(pid) \(executable)"] + parents.map { "parent \($0)" }).joined(separator: ", ")
        let client = Client(uid: uid, pid: pid, identity: ApplicationIdentity(executable: executable, chain: chain))
        if known.count >= Self.maximumKnown, let first = known.keys.first { known[first] = nil }
        known[sender] = client
        return client
    }

    /// Forgets a client that left the bus.
    func forget(_ sender: String) {
        known[sender] = nil
    }
}
