public import FoundationEssentials

/// One stored audit record, as ``AuditLog`` returns it.
///
/// Holds names and short reasons only, never a secret or a template, so it may be
/// shown, exported and logged freely.
public struct AuditRecord: Sendable, Equatable {
    /// Position in the log: 1, 2, 3, … with no gaps (pruning removes a prefix).
    public let sequence: Int64
    /// Wall-clock time, Unix seconds with fraction (UTC). Exactly the stored value.
    public let unixTime: Double
    /// Seconds since boot from `CLOCK_BOOTTIME` (counts suspend; immune to clock changes).
    public let bootTime: Double
    /// `/proc/sys/kernel/random/boot_id` when the record was written: with ``bootTime``
    /// it orders records within one boot even if the wall clock was changed.
    public let bootID: String
    /// The OS user id of the writing process.
    public let uid: UInt32
    /// The login name of ``uid`` from the password database (`#<uid>` when it has none).
    public let loginName: String
    /// The vault user acting, if known.
    public let vaultUser: String?
    /// What happened.
    public let event: AuditEvent
    /// The item concerned, by name, if any.
    public let item: String?
    /// How it ended.
    public let outcome: AuditOutcome
    /// Short explanation.
    public let reason: String
    /// The MAC of the record before this one (or the genesis value / prune anchor).
    public let previousMAC: [UInt8]
    /// This record's keyed BLAKE2b-256 over all the fields above.
    public let mac: [UInt8]
    /// The previous record's public link (``AuditSeal``), when read with the chain.
    public var previousChain: [UInt8]?
    /// This record's public link: unkeyed BLAKE2b-256 over the trail, ``previousChain`` and
    /// every field above, when read with the chain.
    public var chain: [UInt8]?

    /// A record as received from elsewhere (an export), to check with ``AuditChainVerifier``.
    public init(sequence: Int64, unixTime: Double, bootTime: Double, bootID: String, uid: UInt32, loginName: String,
                vaultUser: String?, event: AuditEvent, item: String?, outcome: AuditOutcome, reason: String,
                previousMAC: [UInt8], mac: [UInt8], previousChain: [UInt8]? = nil, chain: [UInt8]? = nil) {
        self.sequence = sequence
        self.unixTime = unixTime
        self.bootTime = bootTime
        self.bootID = bootID
        self.uid = uid
        self.loginName = loginName
        self.vaultUser = vaultUser
        self.event = event
        self.item = item
        self.outcome = outcome
        self.reason = reason
        self.previousMAC = previousMAC
        self.mac = mac
        self.previousChain = previousChain
        self.chain = chain
    }

    /// ``unixTime`` as a `Date`.
    public var time: Date { Date(timeIntervalSince1970: unixTime) }
}
