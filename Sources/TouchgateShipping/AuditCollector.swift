public import TouchgateVault
public import TouchgateAPI

/// The fleet collector as the shipping use case needs it (`TouchgateService.shipAudit(to:configuration:)`):
/// a store for records and seals that keeps an append-only log of every shipment, and
/// proves what its log holds. The adapter in `touchgated` and `touchgate audit ship` is
/// PostgreSQL (`TouchgateFleet`); nothing here trusts it: every answer is checked.
public protocol AuditCollector: Sendable {
    /// Stores `records` (consecutive, oldest first, with their public links) of `trail`
    /// from `machine`, then `seal` when given, and has the collector append `batch` (the
    /// head naming them, signed by this machine) to the fleet log, all in one transaction:
    /// all of them or none. The machine never writes the log itself: the collector's own
    /// code checks that the head names the rows just stored and computes the tree. Returns
    /// the log index of the entry that names the batch (an identical one already in the log
    /// is not appended again: a batch sent twice after an interruption is stored once), or
    /// nil when `batch` is nil.
    ///
    /// Returns once committed; an adapter that blocks (a database client library) does so
    /// off the cooperative pool, so a collector that is slow to answer never stalls the
    /// daemon's other requests.
    /// - Throws: ``ServiceError`` `collector-unavailable` when the database cannot be
    ///   reached or the transaction does not commit (an outage); `audit-broken` when the
    ///   collector already holds other records at these sequence numbers (squatted), or its
    ///   log is damaged, naming what.
    func store(machine: String, trail: [UInt8], publicKey: [UInt8], records: [AuditRecord], seal: AuditSeal?,
               batch: FleetEntry.Batch?) async throws(ServiceError) -> Int64?

    /// The log's tree head as a checkpoint (a note; signed by the log's key when the
    /// collector published one at that size), with the entry at `leaf` and its
    /// inclusion proof, and the consistency proof from the tree of `old` entries, each
    /// against that checkpoint.
    /// - Throws: ``ServiceError`` `collector-unavailable`, or `audit-broken` when the log
    ///   cannot give them (a node it must hold is gone, the leaf is past its end).
    func proofs(leaf: Int64?, from old: Int64?) async throws(ServiceError) -> FleetProofs

    /// Ends the connection, if one is open. The collector reconnects on the next call.
    func close()
}

/// What ``AuditCollector/proofs(leaf:from:)`` returns.
public struct FleetProofs: Sendable {
    /// The newest checkpoint's note, as stored.
    public var checkpoint: String
    /// The text of the entry at the leaf asked about.
    public var entry: String?
    /// Its inclusion proof (RFC 9162 §2.1.3).
    public var inclusion: [[UInt8]]
    /// The consistency proof from the older size asked about (RFC 9162 §2.1.4).
    public var consistency: [[UInt8]]

    public init(checkpoint: String, entry: String?, inclusion: [[UInt8]], consistency: [[UInt8]]) {
        self.checkpoint = checkpoint
        self.entry = entry
        self.inclusion = inclusion
        self.consistency = consistency
    }
}
