import Foundation
import TouchgateAPI
import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// Who is behind a unique bus name, judged at each message: the uid and pid the bus daemon
/// took from the connection's socket (`SO_PEERCRED` when it connected), and what the kernel
/// says of that pid now (``ProcessFacts``), compared with what it said when this door first
/// saw the name.
///
/// What the bus and the kernel let this door prove (docs/INTEGRATIONS.md, "Secret Service"):
/// the uid and the pid are the bus's word. The program is taken for the file it runs (by
/// device and inode) only when nothing speaks against it; otherwise the identity carries a
/// ``ApplicationIdentity/doubt`` and the service asks, every time, naming why:
/// - the process exec'd another program, or the pid is another process's, since first seen;
/// - it runs in another mount or user namespace than this provider (a bind mount over the
///   program's path is visible only there), or the file it runs is not the one at its path here;
/// - the user can rewrite the program or a directory on its path;
/// - it does not hold its connection to the bus alone: the bus names it for more connections
///   than it holds sockets to the bus, or another process holds the same socket (a fork that
///   talks while the parent exec'd an approved program).
/// A process of the same user can still act through an approved program it starts (ptrace
/// where the kernel allows it, LD_PRELOAD, its input): an approval names a program, not its
/// intentions; the touch that names the program is what an attacker cannot give.
actor BusClients {
    struct Client: Sendable {
        let uid: UInt32
        let loginName: String
        let pid: UInt32
        /// What the kernel said of the pid when the name was first seen.
        let firstSeen: ProcessFacts?
        /// Why the process was found not to hold its own connection alone, when first seen.
        let holding: String?
        /// The program as judged at the latest message.
        var identity: ApplicationIdentity
    }

    private let bus: BusConnection
    private var known: [String: Client] = [:]
    /// The pids of the unique names seen on the bus (a name's pid never changes).
    private var namePIDs: [String: UInt32] = [:]
    /// The bus daemon's pid, once asked.
    private var busPID: Int32?
    /// This provider's own facts: the session's namespaces.
    private let own = ProcessFacts.own
    /// The most clients remembered at once; the oldest are forgotten past it (they are asked
    /// again, from the bus, when they call).
    private static let maximumKnown = 1024

    init(bus: BusConnection) {
        self.bus = bus
    }

    /// The client behind `sender`, judged now.
    /// - Throws: `AccessDenied` for another user's process, `Failed` when the bus does not say.
    func client(_ sender: String) throws(SecretServiceError) -> Client {
        var client: Client
        if let seen = known[sender] { client = seen } else { client = try firstSight(sender) }
        client.identity = judge(client)
        known[sender] = client
        return client
    }

    /// Asks the bus who `sender` is and records what the kernel says of it now.
    private func firstSight(_ sender: String) throws(SecretServiceError) -> Client {
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
        namePIDs[sender] = pid
        let facts = ProcessFacts.of(Int32(bitPattern: pid))
        if known.count >= Self.maximumKnown, let first = known.keys.first { known[first] = nil }
        return Client(uid: uid, loginName: UserDatabase.loginName(of: uid), pid: pid, firstSeen: facts, holding: holdingDoubt(pid: Int32(bitPattern: pid)),
                      identity: ApplicationIdentity(executable: "unknown", chain: "pid \(pid)"))
    }

    /// The program behind `client` at this message, with what speaks against it.
    private func judge(_ client: Client) -> ApplicationIdentity {
        let pid = Int32(bitPattern: client.pid)
        let now = ProcessFacts.of(pid)
        let executable = now?.executablePath ?? ProcessTable.executable(of: pid) ?? "unknown"
        let parents = ProcessTable.chain(above: pid)
        let chain = (["pid \(client.pid) \(executable)"] + parents.map { "parent \($0)" }).joined(separator: ", ")
        return ApplicationIdentity(executable: executable, chain: chain,
                                   doubt: doubt(now: now, client: client, executable: executable))
    }

    private func doubt(now: ProcessFacts?, client: Client, executable: String) -> String? {
        guard let now, let first = client.firstSeen else { return "the process that connected is gone" }
        guard now.isSameImage(as: first) else {
            return "the process that connected runs another program now, or its pid is another process's"
        }
        if let own, !now.sharesNamespaces(with: own) {
            return "it runs in another mount or user namespace than your session"
        }
        guard executable.hasPrefix("/"), let here = FileID(path: executable), here == now.executable else {
            return "the file it runs is not the one at \(executable) in your session"
        }
        if let writable = ExecutableWritability.reason(executable, writableBy: client.uid) { return writable }
        return client.holding
    }

    /// Why the process `pid` cannot be said to hold its connection to the bus alone, or nil
    /// when it does: it holds a socket to the bus daemon for each name the bus gives its
    /// pid, and no other process holds any of them. Computed once per name (a process
    /// that exec's after that is caught by ``ProcessFacts/isSameImage(as:)``).
    private func holdingDoubt(pid: Int32) -> String? {
        let unknown = "it cannot be told whether the process holds its own connection to the bus"
        guard let daemon = daemonPID(), let daemonSockets = SocketHolders.sockets(of: daemon),
              let held = SocketHolders.sockets(of: pid) else { return unknown }
        // What the bus says of its clients is believed only from a bus daemon the user cannot
        // have rewritten: a program of the user's posing as the bus could name any pid.
        guard Self.isKnownBusDaemon(pid: daemon) else {
            return "the session bus is not run by dbus-daemon or dbus-broker, so what it says of its clients is not believed"
        }
        let toBus = held.filter { socket in SocketHolders.peer(of: socket).map(daemonSockets.contains) == true }
        guard let names = namesOf(pid: UInt32(bitPattern: pid)) else { return unknown }
        if toBus.count < names {
            return "the connection it asks through is not held by the process the bus names for it"
        }
        let others = SocketHolders.otherHolders(of: Set(toBus), besides: pid, uid: getuid())
        if let other = others.first {
            return "process \(other) holds the same connection to the bus"
        }
        return nil
    }

    /// The programs that run a session bus, as Debian installs them.
    static let busDaemons = ["/usr/bin/dbus-daemon", "/usr/bin/dbus-broker"]

    /// Whether `pid` runs one of ``busDaemons`` (by device and inode), which the user cannot rewrite.
    static func isKnownBusDaemon(pid: Int32) -> Bool {
        guard let running = FileID(path: "/proc/\(pid)/exe") else { return false }
        return busDaemons.contains { path in
            FileID(path: path) == running && ExecutableWritability.reason(path, writableBy: getuid()) == nil
        }
    }

    /// The bus daemon's own pid (the bus answers for its own name).
    private func daemonPID() -> Int32? {
        if let busPID { return busPID }
        guard let reply = try? bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "GetConnectionUnixProcessID", [.string("org.freedesktop.DBus")]),
              case .uint32(let pid)? = reply.first else { return nil }
        busPID = Int32(bitPattern: pid)
        return busPID
    }

    /// How many unique names on the bus belong to `pid`, nil when the bus does not say.
    private func namesOf(pid: UInt32) -> Int? {
        guard let reply = try? bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "ListNames", []),
              case .array(_, let values)? = reply.first else { return nil }
        let unique = Set(values.compactMap(\.text).filter { $0.hasPrefix(":") })
        namePIDs = namePIDs.filter { unique.contains($0.key) }
        var count = 0
        for name in unique {
            if namePIDs[name] == nil,
               let reply = try? bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                         "GetConnectionUnixProcessID", [.string(name)]),
               case .uint32(let owner)? = reply.first {
                namePIDs[name] = owner
            }
            if namePIDs[name] == pid { count += 1 }
        }
        return count
    }

    /// Forgets a client that left the bus.
    func forget(_ sender: String) {
        known[sender] = nil
        namePIDs[sender] = nil
    }
}
