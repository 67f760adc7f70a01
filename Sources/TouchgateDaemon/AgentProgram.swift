import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// touchgate agent's program as this host can know it. touchgated runs as a user of its
/// own and may not read a client's `/proc/PID/exe`; what the kernel tells it of every
/// connection is the connecting process's effective group at `connect(2)`. The installed
/// `touchgate-cli` is set-group-ID to the agent's group (``AgentGroup``), which no user is
/// a member of, so a connection made with that group was made by the installed program,
/// which the set-group-ID exec made one the user cannot read or steer (not dumpable); an
/// exec after connecting does not change what the kernel recorded, so a process that
/// connects and then execs the agent's program is not taken for it.
///
/// What this does not stop (docs/SECURITY.md): what the agent program itself is told by the
/// user's session (the bus it serves, its arguments).
struct AgentProgram: Sendable {
    /// The agent's group, nil when this system has none (then only root may name a program).
    let group: gid_t?

    /// The group named `name` (or a number), nil when there is none.
    init(group name: String) {
        if let number = gid_t(name) {
            group = number
        } else if let entry = getgrnam(name) {
            group = entry.pointee.gr_gid
        } else {
            group = nil
        }
    }

    /// Whether a connection made with effective group `gid` is the agent program's.
    func made(withGroup gid: UInt32) -> Bool {
        group != nil && gid == group
    }
}
