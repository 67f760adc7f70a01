import FoundationEssentials
import TouchgateBasics
public import TouchgateService

/// The bounds that keep touchgated serving every user while one of them attacks it. Each
/// has a `touchgated` option; the defaults suit a shared workstation.
public struct DaemonSettings: Sendable {
    /// How long a question (a passphrase, a value to store, a confirmation) waits for its
    /// answer before the request ends with `timed-out`.
    public var answerTimeout: Duration = .seconds(120)
    /// How long a reader operation waits for a finger (``FingerWait``).
    public var fingerTimeout: Duration = FingerWait.defaultTimeout
    /// How long one write to a client may make no progress before the connection is closed.
    public var sendTimeout = 10
    /// How many bytes may wait to be written to one client before it is cut off.
    public var outboxLimit = 1 << 20
    /// Connections per user (``ConnectionLimit``).
    public var connectionsPerUser = ConnectionLimit.defaultPerUser
    /// Connections in all, lowered to what locked memory allows.
    public var connections = ConnectionLimit.defaultTotal
    /// Requests that may write audit records, per user: a burst of this many...
    public var requestBurst = 100
    /// ...refilled at this many per second.
    public var requestsPerSecond = 1.0
    /// Disk space set aside in the state directory for `secret rm` and `lock` on a full disk.
    public var diskReserve = 8 << 20
    /// The group touchgate agent's program is installed set-group-ID to (``AgentProgram``):
    /// a name or a number.
    public var agentGroup = AgentGroup.name
    /// Where the reader is, for the closed-lid rule (``ReaderPresence``).
    public var readerPlacement = ReaderPresence.Placement.auto

    public init() {}
}
