import Foundation
import TouchgatePolicy
import TouchgateVault
import TouchgateWire

extension TouchgateService {
    /// Sends the principal's audit records the collector does not hold yet, then the seal
    /// that vouches for them (`touchgate audit ship`); returns what was sent.
    ///
    /// Delivery is at least once: records go in batches of ``FleetConfiguration/batchSize``,
    /// one transaction each, and the local cursor (the last sequence shipped, kept in the
    /// store) moves only after the collector committed a batch. An interrupted shipment
    /// resumes from the cursor; a record sent twice is stored once. Only records up to the
    /// seal taken at the start are sent, so the last batch always ends at the record the
    /// seal names; records written meanwhile go with the next shipment.
    /// - Throws: ``ServiceError`` `collector-unavailable` when the collector cannot be
    ///   reached (the records stay queued), `backlog-full` when that happens with more
    ///   records waiting than ``FleetConfiguration/backlogLimit``; `audit-error` for a
    ///   trail without a seal.
    public func shipAudit(to collector: any AuditCollector,
                          configuration: FleetConfiguration) async throws(ServiceError) -> AuditShipReport {
        try await withStore { access in
            let log = try access.audit()
            guard let seal = try log.seal() else {
                throw ServiceError(.auditError, "this audit trail has no seal, so a collector could not verify it: run "
                                   + "`touchgate audit verify` and keep a copy (touchgate audit export > FILE)")
            }
            var cursor = try log.shippedThrough(trail: seal.trail)
            var (shipped, batches) = (0, 0)
            repeat {
                let batch = try log.linkedRecords(after: cursor, through: seal.sequence, limit: configuration.batchSize)
                let last = batch.last?.sequence ?? seal.sequence
                do throws(ServiceError) {
                    try await collector.store(machine: configuration.machine, trail: seal.trail, publicKey: seal.publicKey,
                                        records: batch, seal: last == seal.sequence ? seal : nil)
                } catch {
                    throw Self.undelivered(error, waiting: seal.sequence - cursor, limit: configuration.backlogLimit)
                }
                try log.markShipped(trail: seal.trail, through: last)
                (cursor, shipped, batches) = (last, shipped + batch.count, batches + 1)
            } while cursor < seal.sequence
            return AuditShipReport(machine: configuration.machine, user: principal.loginName, trail: Hex.encode(seal.trail), shipped: shipped,
                                   through: seal.sequence, batches: batches)
        }
    }

    /// A failed delivery, with how many records wait and whether that is over the limit.
    static func undelivered(_ error: ServiceError, waiting: Int64, limit: Int) -> ServiceError {
        guard error.code == .collectorUnavailable else { return error }
        let queued = "\(waiting) record\(waiting == 1 ? "" : "s") wait to be shipped and stay queued here"
        if waiting > Int64(limit) {
            return ServiceError(.backlogFull, "\(error.message). Warning: \(queued), more than the backlog limit of "
                                + "\(limit): the collector has been away too long; fix the connection (fleet.conf) and run "
                                + "`touchgate audit ship` again before pruning the trail")
        }
        return ServiceError(.collectorUnavailable, "\(error.message); \(queued): run `touchgate audit ship` again once "
                            + "the collector is back")
    }
}
