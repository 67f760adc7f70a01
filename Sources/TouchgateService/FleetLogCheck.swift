import TouchgatePolicy
import TouchgateVault
import TouchgateAPI
import TouchgateShipping

/// What a machine checks of the collector's answer after each shipment, before it moves
/// its cursor: that the newest checkpoint is of the same log as the one it accepted
/// before, that the log only grew since (a consistency proof), and that it holds the
/// shipment just made (the entry and its inclusion proof). A cut or rewritten log, a log
/// replaced by another, or a batch stored as something else fails here with `audit-broken`.
enum FleetLogCheck {
    static func broken(_ reason: String) -> ServiceError {
        ServiceError(.auditBroken, "log damaged: \(reason); nothing was marked shipped. Tell the collector's auditor: "
                     + "the records are safe here and go again with the next `touchgate audit ship`")
    }

    /// `error` from the collector, other than an outage, said as a damaged log (`audit-broken`):
    /// a collector that will not prove what it holds is one the machine cannot trust.
    static func damaged(_ error: ServiceError) -> ServiceError {
        guard error.code != .collectorUnavailable, error.code != .backlogFull,
              !(error.code == .auditBroken && error.message.hasPrefix("log damaged")) else { return error }
        return broken(error.message)
    }

    /// Throws unless `checkpoint` is of the same log as `accepted` and `proof` shows it only
    /// grew from it. Also what the machine checks before it signs a new checkpoint.
    static func extends(_ checkpoint: Checkpoint, _ accepted: Checkpoint?, proof: [[UInt8]]) throws(ServiceError) {
        guard let accepted else { return }
        guard checkpoint.origin == accepted.origin else {
            throw broken("the collector's fleet log is another log (\(checkpoint.origin)) than the one this machine "
                         + "shipped to before (\(accepted.origin)): it was replaced. If the collector was rebuilt on "
                         + "purpose, run `touchgate audit ship --new-log` once")
        }
        guard checkpoint.size >= accepted.size else {
            throw broken("the collector's fleet log holds \(checkpoint.size) entries, fewer than the \(accepted.size) "
                         + "this machine saw: it was cut back")
        }
        guard MerkleTree.verifyConsistency(old: accepted.size, oldRoot: accepted.root, size: checkpoint.size,
                                           root: checkpoint.root, proof: proof) else {
            throw broken("the collector's fleet log (\(checkpoint.size) entries) does not extend the one this machine "
                         + "accepted (\(accepted.size) entries): entries were changed or removed")
        }
    }

    static func check(_ proofs: FleetProofs, leaf: Int64?, shipment: FleetEntry.Shipment?,
                      accepted: Checkpoint?) throws(ServiceError) -> Checkpoint {
        do throws(ServiceError) {
            return try checked(proofs, leaf: leaf, shipment: shipment, accepted: accepted)
        } catch {
            throw damaged(error)
        }
    }

    private static func checked(_ proofs: FleetProofs, leaf: Int64?, shipment: FleetEntry.Shipment?,
                                accepted: Checkpoint?) throws(ServiceError) -> Checkpoint {
        guard let body = SignedNote.parse(proofs.checkpoint)?.body, let checkpoint = Checkpoint(body: body) else {
            throw broken("the collector's newest checkpoint is not a checkpoint")
        }
        try extends(checkpoint, accepted, proof: proofs.consistency)
        if let shipment {
            guard let leaf, let text = proofs.entry, let stored = FleetEntry(text: text)?.shipped,
                  stored.machine.utf8.elementsEqual(shipment.machine.utf8), stored.trail == shipment.trail, stored.last == shipment.last,
                  stored.chain == shipment.chain, stored.publicKey == shipment.publicKey, stored.first <= shipment.first
            else {
                throw broken("the collector's fleet log does not name records \(shipment.first)…\(shipment.last) of this "
                             + "trail as shipped")
            }
            guard MerkleTree.verifyInclusion(leaf: MerkleTree.leafHash(Array(text.utf8)), index: leaf,
                                             size: checkpoint.size, proof: proofs.inclusion, root: checkpoint.root) else {
                throw broken("the shipment of records \(shipment.first)…\(shipment.last) is not in the collector's fleet "
                             + "log as its checkpoint says (entry \(leaf), \(checkpoint.size) entries)")
            }
        }
        return checkpoint
    }
}
