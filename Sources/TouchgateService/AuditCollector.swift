import TouchgateVault
import TouchgateWire

/// Where `touchgate audit ship` sends a trail: the fleet collector's database. The port
/// the shipping use case (``TouchgateService/shipAudit(to:configuration:)``) talks to;
/// `TouchgateFleet` implements it over PostgreSQL.
public protocol AuditCollector: Sendable {
    /// Stores `records` (consecutive, oldest first, with their public links) of `trail`
    /// from `machine`, then `seal` when given, in one transaction: all of them or none.
    /// Records and seals the collector already holds are left as they are, so sending
    /// them again after an interruption is harmless. Returns once committed; an adapter
    /// that blocks (a database client library) does so off the cooperative pool, so a
    /// collector that is slow to answer never stalls the daemon's other requests.
    /// - Throws: ``ServiceError`` `collector-unavailable` when the database cannot be
    ///   reached or the transaction does not commit.
    func store(machine: String, trail: [UInt8], publicKey: [UInt8], records: [AuditRecord],
               seal: AuditSeal?) async throws(ServiceError)

    /// Ends the connection, if one is open. The collector reconnects on the next ``store``.
    func close()
}
