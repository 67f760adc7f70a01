import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateShipping
public import TouchgateAPI

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
    ///
    /// After each batch the collector must prove that its fleet log holds the shipment and
    /// only grew since the checkpoint this store accepted last (``FleetLogCheck``); only
    /// then does the cursor move and the new checkpoint become the accepted one. A failed
    /// proof is `audit-broken`, written to this trail as `audit.ship`. With `newLog`, the
    /// accepted checkpoint is forgotten first: for a collector rebuilt on purpose.
    public func shipAudit(to collector: any AuditCollector, configuration: FleetConfiguration,
                          newLog: Bool = false) async throws(ServiceError) -> AuditShipReport {
        try await withStore { access in
            let log = try access.audit()
            if newLog {
                try log.forgetCheckpoint()
                _ = try log.append(.auditShip, .success, vaultUser: principal.loginName,
                                   reason: "the fleet checkpoint kept was forgotten (audit ship --new-log): the next "
                                       + "shipment accepts the collector's log as it is")
            }
            guard let seal = try log.seal() else {
                throw ServiceError(.auditError, "this audit trail has no seal, so a collector could not verify it: run "
                                   + "`touchgate audit verify` and keep a copy (touchgate audit export > FILE)")
            }
            var accepted = try Self.acceptedCheckpoint(log)
            var cursor = try log.shippedThrough(trail: seal.trail)
            var (shipped, batches) = (0, 0)
            let machine = configuration.machine
            do {
                repeat {
                    let batch = try log.linkedRecords(after: cursor, through: seal.sequence, limit: configuration.batchSize)
                    let last = batch.last?.sequence ?? seal.sequence
                    // The batch head: what the log will hold of this batch, signed here.
                    let head = batch.first.flatMap { first in
                        batch.last?.chain.flatMap { chain in
                            first.previousChain.map { previous in
                                let shipment = FleetEntry.Shipment(machine: machine, trail: seal.trail, first: first.sequence,
                                                                   last: last, chain: chain, publicKey: seal.publicKey)
                                return FleetEntry.signedBatch(shipment, previous: previous, sign: log.signFleetMessage)
                            }
                        }
                    }
                    let leaf: Int64?
                    let proofs: FleetProofs
                    do throws(ServiceError) {
                        leaf = try await collector.store(
                            machine: machine, trail: seal.trail, publicKey: seal.publicKey, records: batch,
                            seal: last == seal.sequence ? seal : nil, batch: head)
                    } catch {
                        throw Self.undelivered(error, waiting: seal.sequence - cursor, limit: configuration.backlogLimit)
                    }
                    do throws(ServiceError) {
                        proofs = try await collector.proofs(leaf: leaf, from: accepted.map { $0.checkpoint.size })
                    } catch {
                        // The batch is stored, yet the log will not prove it: an outage at that
                        // very moment, or a collector hiding its log. Either way it is written down.
                        Self.recordShipFailure(log, user: principal.loginName,
                                               "the collector stored records \(batch.first?.sequence ?? last)…\(last) "
                                                   + "but did not give its log's proofs: \(error.message)")
                        throw Self.undelivered(error, waiting: seal.sequence - cursor, limit: configuration.backlogLimit)
                    }
                    let checkpoint = try FleetLogCheck.check(proofs, leaf: leaf, shipment: head?.shipment, accepted: accepted?.checkpoint)
                    // Only now, with the collector's log proved to hold the batch and to have
                    // only grown since the checkpoint kept here, does the cursor move.
                    try log.accept(checkpoint: proofs.checkpoint, size: checkpoint.size, trail: seal.trail, shippedThrough: last)
                    accepted = (checkpoint, proofs.checkpoint)
                    (cursor, shipped, batches) = (last, shipped + batch.count, batches + 1)
                } while cursor < seal.sequence
            } catch let error as ServiceError where error.code == .auditBroken {
                // What the collector did is written to this machine's own trail, which the
                // next shipment carries to the collector (and to anyone verifying it); once
                // while it lasts, not again at every round of touchgated's shipping.
                Self.recordShipFailure(log, user: principal.loginName,
                                       "shipment to the fleet collector refused: \(error.message)")
                throw error
            }
            return AuditShipReport(machine: machine, user: principal.loginName, trail: Hex.encode(seal.trail), shipped: shipped,
                                   through: seal.sequence, batches: batches,
                                   logSize: accepted?.checkpoint.size)
        }
    }

    /// Writes a failed shipment to the trail (`audit.ship`, `failure`), unless the newest such
    /// record already says the same (compared as stored: cleaned and cut to its limit).
    static func recordShipFailure(_ log: AuditLog, user: String, _ reason: String) {
        let entry = AuditEntry(event: .auditShip, outcome: .failure, vaultUser: user, reason: reason)
        let last = try? log.records(AuditQuery(events: [.auditShip], limit: 1, order: .newestFirst)).first
        if let last, last.outcome == .failure, last.reason == entry.reason { return }
        _ = try? log.append(entry)
    }

    /// The checkpoint this store accepted last, if any.
    static func acceptedCheckpoint(_ log: AuditLog) throws(ServiceError) -> (checkpoint: Checkpoint, note: String)? {
        let note: String?
        do { note = try log.acceptedCheckpoint() } catch { throw ServiceError(.auditError, "cannot read the fleet checkpoint kept in the store: \(error)") }
        guard let note else { return nil }
        guard let body = SignedNote.parse(note)?.body, let checkpoint = Checkpoint(body: body) else {
            throw ServiceError(.auditBroken, "the fleet checkpoint kept in this store is not a checkpoint: the store was "
                               + "edited; nothing was shipped")
        }
        return (checkpoint, note)
    }

    /// A failed delivery, with how many records wait and whether that is over the limit.
    /// Its message starts with what it is: "outage" (the collector is away or refused the
    /// transaction: nothing is wrong with what it holds) or "log damaged" (``FleetLogCheck``).
    static func undelivered(_ error: ServiceError, waiting: Int64, limit: Int) -> ServiceError {
        guard error.code == .collectorUnavailable else { return FleetLogCheck.damaged(error) }
        let queued = "\(waiting) record\(waiting == 1 ? "" : "s") wait to be shipped and stay queued here"
        // Which of the two it is, said first: an outage passes; a damaged log needs its auditor.
        let error = error.message.hasPrefix("outage") ? error
            : ServiceError(.collectorUnavailable, "outage: \(error.message)")
        if waiting > Int64(limit) {
            return ServiceError(.backlogFull, "\(error.message). Warning: \(queued), more than the backlog limit of "
                                + "\(limit): the collector has been away too long; fix the connection (fleet.conf) and run "
                                + "`touchgate audit ship` again before pruning the trail")
        }
        return ServiceError(.collectorUnavailable, "\(error.message); \(queued): run `touchgate audit ship` again once "
                            + "the collector is back")
    }
}
