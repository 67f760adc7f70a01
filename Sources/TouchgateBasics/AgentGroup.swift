import CTouchgateSys
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The group `touchgate-cli` is installed set-group-ID to (`touchgate-agent`, no members):
/// how touchgated, which runs as a user of its own and cannot read a client's
/// `/proc/PID/exe`, knows a connection comes from touchgate agent's program. The kernel
/// records the connecting process's effective group with the connection (`SO_PEERCRED`);
/// no process of the user has that group unless it runs the installed program, which the
/// set-group-ID exec also makes non-dumpable (no ptrace, no memory reads by the user).
/// Only the agent's doors keep it, and only where they forward to touchgated: every other
/// command gives it up before anything else runs. The doors themselves hold it only while
/// they connect to touchgated, on the connecting thread alone (``whileConnecting(_:)``): the
/// rest of the time, and on every other thread, their effective group is the user's, so they read the user's processes in /proc as any
/// process of the user does (the kernel lets only a process with the same groups read
/// another's executable) and whatever they create is the user's.
public enum AgentGroup {
    /// The group's name, as the packages make it.
    public static let name = "touchgate-agent"

    /// Whether this process holds a group it was not started with.
    public static var isHeld: Bool { getegid() != getgid() }

    /// The group kept for connecting (the saved group), or `none`: set once, first thing.
    private static let kept = Atomic<UInt32>(none)
    private static let none = UInt32.max

    /// Gives up the set-group-ID group for good (real, effective and saved), so that nothing
    /// this process creates or starts has it. Exits when the kernel refuses, which it
    /// never does for a process returning to its own group.
    public static func drop() {
        let own = getgid()
        guard getegid() != own else { return }
        // Setting the real group sets the saved one too (setregid(2)): nothing to return to.
        if setregid(own, own) != 0 || getegid() != own {
            FileOutput.write("touchgate: cannot give up the group touchgate-agent: \(String(cString: strerror(errno)))\n",
                             to: 2)
            exit(ExitStatus.commandNotRunnable)
        }
    }

    /// Whether `words` (the command line without the program) run one of the agent's doors,
    /// which keep the group while they forward to touchgated: `agent` and `secret-service serve`,
    /// and AI agents' door (`run`, `approve`, `mcp`), whose approvals touchgated takes only from
    /// the installed program: it shows the person what it was asked and runs exactly that.
    public static func isAgentDoor(_ words: [String]) -> Bool {
        let command = words.filter { !$0.hasPrefix("-") }
        return ["agent", "run", "approve", "mcp"].contains(command.first ?? "") || command.prefix(2) == ["secret-service", "serve"]
    }

    /// Keeps the group only for an agent door that forwards to touchgated (the personal mode
    /// hosts the store in this process, whose files must not be the group's).
    public static func keepOnlyForAgentDoors(_ words: [String]) {
        guard isHeld, isAgentDoor(words), Invocation.daemonSocket() != nil else { return drop() }
        // Kept as the saved group only: effective again only while connecting.
        let group = getegid()
        guard setegid(getgid()) == 0 else { return drop() }
        kept.store(group, ordering: .releasing)
    }

    /// Runs `body` (a `connect(2)` to touchgated) with the kept group effective for this
    /// thread alone, so that the kernel records it with the connection; as the user's own
    /// group when none is kept. No lock: a connect that a stalled daemon blocks holds nothing
    /// another thread needs.
    public static func whileConnecting<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let group = kept.load(ordering: .acquiring)
        guard group != none, CTouchgateSys_set_thread_egid(group) == 0 else { return try body() }
        defer { _ = CTouchgateSys_set_thread_egid(getgid()) }
        return try body()
    }
}
