import FoundationEssentials
import TouchgateAPI
import Synchronization
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
///   than it holds sockets to the bus, or one of them was kept from before it started the
///   program it runs (a fork that talks while the parent exec'd an approved program).
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
        /// The program as judged at the latest message.
        var identity: ApplicationIdentity
        /// Whether the process holds its connection alone, being found out beside the client's
        /// first calls (measured: 2.5 ms, a seventh of a whole lookup, when it came first);
        /// awaited before any call that decides by the program. Nil once known.
        var holding: Task<HoldingVerdict, Never>?
    }

    /// Why the process does not hold its connection alone (nil: it does).
    struct HoldingVerdict: Sendable {
        let doubt: String?
    }

    private let bus: BusConnection
    private var known: [String: Client] = [:]
    /// The unique names on the bus and their pids, kept from the bus daemon's signals.
    private let names: BusNames
    /// The bus daemon's pid, once asked.
    private var busPID: Int32?
    /// Whether that is a bus daemon whose word is believed, once asked.
    private var busIsKnown: Bool?
    /// The sockets the bus daemon holds, read again when a client's is not among them.
    private let daemonSockets = DaemonSockets()
    /// This provider's own facts: the session's namespaces.
    private let own = ProcessFacts.own
    /// The most clients remembered at once; the oldest are forgotten past it (they are asked
    /// again, from the bus, when they call).
    private static let maximumKnown = 1024

    init(bus: BusConnection, names: BusNames) {
        self.bus = bus
        self.names = names
    }

    /// The client behind `sender`, judged now: what was found of it when first seen, unless
    /// it runs another image than then (an exec, or its pid taken by another process).
    /// Measured: reading every fact again at each message cost each call 0.15 ms.
    /// - Throws: `AccessDenied` for another user's process, `Failed` when the bus does not say.
    func client(_ sender: String, judged: Bool) async throws(SecretServiceError) -> Client {
        var client: Client
        if let seen = known[sender] { client = seen } else { client = try firstSight(sender) }
        if client.firstSeen?.isSameImage(as: ProcessFacts.image(of: Int32(bitPattern: client.pid))) != true {
            client.identity.doubt = client.firstSeen == nil ? "the process that connected is gone"
                : "the process that connected runs another program now, or its pid is another process's"
        }
        if judged, let holding = client.holding {
            let verdict = await holding.value
            client = known[sender] ?? client
            client.holding = nil
            if client.identity.doubt == nil { client.identity.doubt = verdict.doubt }
        }
        known[sender] = client
        return client
    }

    /// Asks the bus who `sender` is and judges what the kernel says of it now.
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
        names.found(pid, of: sender)
        let process = Int32(bitPattern: pid)
        let facts = ProcessFacts.of(process)
        if known.count >= Self.maximumKnown, let first = known.keys.first { known[first] = nil }
        let executable = facts?.executablePath ?? ProcessTable.executable(of: process) ?? "unknown"
        let parents = ProcessTable.chain(above: process)
        let chain = (["pid \(pid) \(executable)"] + parents.map { "parent \($0)" }).joined(separator: ", ")
        let doubt = Self.doubt(facts, own: own, executable: executable, uid: uid)
        var holding: Task<HoldingVerdict, Never>?
        if doubt == nil {
            let (bus, names, daemon, daemonSockets) = (bus, names, daemonPID(), daemonSockets)
            if busIsKnown == nil, let daemon { busIsKnown = Self.isKnownBusDaemon(pid: daemon) }
            let known = busIsKnown == true
            holding = Task.detached {
                Self.holding(pid: process, daemon: daemon, busIsKnown: known, names: names, daemonSockets: daemonSockets,
                             bus: bus)
            }
        }
        return Client(uid: uid, loginName: UserDatabase.loginName(of: uid), pid: pid, firstSeen: facts,
                      identity: ApplicationIdentity(executable: executable, chain: chain, doubt: doubt), holding: holding)
    }

    /// What speaks against taking the process with `facts` for the program at `executable`.
    static func doubt(_ facts: ProcessFacts?, own: ProcessFacts?, executable: String, uid: UInt32) -> String? {
        guard let facts else { return "the process that connected is gone" }
        if let own, !facts.sharesNamespaces(with: own) {
            return "it runs in another mount or user namespace than your session"
        }
        guard executable.hasPrefix("/"), let here = FileID(path: executable), here == facts.executable else {
            return "the file it runs is not the one at \(executable) in your session"
        }
        return ExecutableWritability.reason(executable, writableBy: uid)
    }

    /// Why the process `pid` cannot be said to hold its connection to the bus alone, or nil
    /// when it does: it holds a socket to the bus daemon for each name the bus gives its
    /// pid, and every one of them was made by the program it runs now (marked to close when
    /// it starts another, ``SocketHolders/closesOnExec(pid:descriptor:)``), so none was
    /// made before and shared with another process (a fork or a passed descriptor).
    /// Computed once per name (a process that exec's after that is caught by
    /// ``ProcessFacts/isSameImage(as:)``).
    ///
    /// Hand-written over /proc rather than a search of every process's descriptors, which is
    /// what it replaced: that cost 2 ms per new client on a quiet machine, more with every
    /// process of the user, and could not see into a process made non-dumpable.
    static func holding(pid: Int32, daemon: Int32?, busIsKnown: Bool, names: BusNames,
                        daemonSockets: DaemonSockets, bus: BusConnection) -> HoldingVerdict {
        let unknown = HoldingVerdict(doubt: "it cannot be told whether the process holds its own connection to the bus")
        guard let daemon, let held = SocketHolders.sockets(of: pid) else { return unknown }
        // What the bus says of its clients is believed only from a bus daemon the user cannot
        // have rewritten: a program of the user's posing as the bus could name any pid.
        guard busIsKnown else {
            return HoldingVerdict(doubt: "the session bus is not run by dbus-daemon or dbus-broker, so what it says of "
                                  + "its clients is not believed")
        }
        let peers = held.compactMapValues(SocketHolders.peer(of:))
        guard let count = names.count(of: UInt32(bitPattern: pid), asking: bus) else { return unknown }
        // The daemon's sockets as last read; read again when they leave any name unaccounted for.
        var toBus: [Int32] = []
        for fresh in [false, true] {
            guard let daemonEnds = daemonSockets.sockets(of: daemon, fresh: fresh) else { return unknown }
            toBus = peers.filter { daemonEnds.contains($0.value) }.map(\.key)
            if toBus.count >= count { break }
        }
        if toBus.count < count {
            return HoldingVerdict(doubt: "the connection it asks through is not held by the process the bus names for it")
        }
        if toBus.contains(where: { SocketHolders.closesOnExec(pid: pid, descriptor: $0) != true }) {
            return HoldingVerdict(doubt: "it holds a connection to the bus that it kept from before it started its program, "
                                  + "which another process may share")
        }
        return HoldingVerdict(doubt: nil)
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

    /// Forgets a client that left the bus.
    func forget(_ sender: String) {
        known[sender] = nil
    }
}

/// The bus daemon's sockets (its ends of every client's connection), kept between clients
/// and read again from /proc only when a client's are not all among them: reading them for
/// every client was a tenth of a lookup with a few hundred clients on the bus.
final class DaemonSockets: Sendable {
    private let kept = Mutex<(daemon: Int32, sockets: Set<UInt32>)?>(nil)

    /// The sockets `daemon` holds: as last read unless `fresh`; nil when they cannot be read.
    func sockets(of daemon: Int32, fresh: Bool) -> Set<UInt32>? {
        if !fresh, let known = kept.withLock({ $0 }), known.daemon == daemon { return known.sockets }
        guard let sockets = SocketHolders.sockets(of: daemon).map({ Set($0.values) }) else { return nil }
        kept.withLock { $0 = (daemon, sockets) }
        return sockets
    }
}

/// The unique names on the bus and the pids the bus gives them: kept from the bus daemon's
/// `NameOwnerChanged` signals, recorded as the connection reads them (in the bus's order, so
/// a name's arrival is known before any message it sends), each name's pid asked once. So
/// how many connections the bus gives a pid is known without asking for every name at each
/// new client (measured: listing the names and asking the new one's pid was two round trips
/// of every lookup).
final class BusNames: Sendable {
    private struct Known {
        /// Whether the names present before the signals were watched were listed.
        var listed = false
        var alive: Set<String> = []
        var pids: [String: UInt32] = [:]
    }
    private let known = Mutex(Known())

    /// A unique name joined the bus (`name`) or left it.
    func changed(_ name: String, present: Bool) {
        known.withLock {
            if present { $0.alive.insert(name) } else { $0.alive.remove(name); $0.pids[name] = nil }
        }
    }

    /// The pid the bus gave `name` (a name's pid never changes), kept while the name is on
    /// the bus: an answer that comes after the name left is not kept for good.
    func found(_ pid: UInt32, of name: String) {
        known.withLock { if $0.alive.contains(name) { $0.pids[name] = pid } }
    }

    /// How many unique names on the bus belong to `pid`; nil when the bus does not say.
    /// The names present before the signals were watched are listed once; a name whose pid
    /// is not known yet is asked for.
    func count(of pid: UInt32, asking bus: BusConnection) -> Int? {
        if !known.withLock({ $0.listed }) {
            guard let reply = try? bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                            "ListNames", []),
                  case .array(_, let values)? = reply.first else { return nil }
            let unique = values.compactMap(\.text).filter { $0.hasPrefix(":") }
            known.withLock {
                $0.alive.formUnion(unique)
                $0.listed = true
            }
        }
        let (alive, pids) = known.withLock { ($0.alive, $0.pids) }
        var count = 0
        for name in alive {
            var owner = pids[name]
            if owner == nil, let reply = try? bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                       "GetConnectionUnixProcessID", [.string(name)]),
               case .uint32(let asked)? = reply.first {
                owner = asked
                found(asked, of: name)
            }
            if owner == pid { count += 1 }
        }
        return count
    }
}
