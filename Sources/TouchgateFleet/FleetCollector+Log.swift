public import FoundationEssentials
import TouchgatePolicy
public import TouchgateShipping
public import TouchgateVault
public import TouchgateAPI

/// What an auditor brings to `touchgate-collector verify` from outside the database: the
/// database's administrator can change anything in it, so these are never read from it.
public struct FleetTrust: Sendable {
    /// The enrollment key's verifier: only keys it registered count.
    public var enrollment: NoteVerifier?
    /// Witnesses whose cosignatures to report.
    public var witnesses: [NoteVerifier]
    /// Checkpoints the auditor kept from earlier (a witness's state, an earlier verify):
    /// the log must still agree with each.
    public var checkpoints: [Checkpoint]

    public init(enrollment: NoteVerifier? = nil, witnesses: [NoteVerifier] = [], checkpoints: [Checkpoint] = []) {
        self.enrollment = enrollment
        self.witnesses = witnesses
        self.checkpoints = checkpoints
    }
}

/// A shipment entry of the log, with its index.
struct LoggedShipment {
    var leaf: Int64
    var shipment: FleetEntry.Shipment
}

extension FleetCollector {
    /// Recomputes the whole log from its entries, in order, and checks it: every entry
    /// present and parsing to the columns stored beside it, every checkpoint's root equal
    /// to the recomputed one at its size and signed by the machine whose shipment made it,
    /// every registration signed by the enrollment key (when the auditor gave it), every
    /// checkpoint the auditor holds still matched, and every witness's cosignatures checked.
    /// Memory: the tree's frontier and the registrations; entries and checkpoints stream.
    ///
    /// With `machine`, only the checkpoints that machine's shipments made have their
    /// signatures checked (every root is still recomputed): a rewrite of the log before or
    /// around its shipments changes the roots it signed, and the per-machine verify that
    /// splits a large fleet does not pay for every other machine's signatures.
    func verifyLog(_ trust: FleetTrust, machine: String? = nil) throws(ServiceError) -> (FleetLogReport, registered: [String: Set<[UInt8]>]) {
        let store = FleetLogStore(connection)
        let origin = try store.origin()
        var tree = MerkleTree.Builder()
        var registered: [String: Set<[UInt8]>] = [:]
        var registrations: [FleetLogReport.RegistrationReport] = []
        var checkpoints = 0
        var problem: String?
        var held = trust.checkpoints.sorted { $0.size < $1.size }[...]
        var cosignatures: [(witness: NoteVerifier, size: Int64, line: String)] = []
        for witness in trust.witnesses {
            for row in try connection.execute("SELECT size, line FROM cosignatures WHERE witness = $1 ORDER BY size",
                                              [witness.name]).rows {
                if let size = row[0].flatMap({ Int64($0) }), let line = row[1] { cosignatures.append((witness, size, line)) }
            }
        }
        cosignatures.sort { $0.size < $1.size }
        var pendingCosignatures = cosignatures[...]
        var vouched: [String: Int64] = [:]
        var lastShipment: FleetEntry.Shipment?
        /// The size whose checkpoint was found and checked (every shipment must have one).
        var signedSize: Int64 = -1
        /// Nodes the entries complete, not yet compared with the stored ones; and how many in all.
        var pendingNodes: [(MerkleTree.Node, [UInt8])] = []
        var nodeCount = 0

        /// Compares the nodes the entries gave with the stored ones the proofs are made of.
        func compareNodes() throws(ServiceError) -> String? {
            defer { pendingNodes.removeAll(keepingCapacity: true) }
            let stored = try store.hashes(pendingNodes.map(\.0))
            for (node, hash) in pendingNodes where stored[node] != hash {
                return "the log's stored node at level \(node.level), index \(node.index) is not what its entries give "
                    + "(entry \(node.index << node.level) or a later one was changed, or the node was): the proofs "
                    + "machines and witnesses check no longer speak for the entries"
            }
            return nil
        }

        /// Checks everything that names the tree at its current size.
        func checkAtSize(_ checkpointRows: inout ArraySlice<[String?]>) -> String? {
            let size = tree.size
            let root = tree.root
            while let row = checkpointRows.first, let rowSize = row[0].flatMap({ Int64($0) }), rowSize <= size {
                checkpointRows = checkpointRows.dropFirst()
                checkpoints += 1
                guard rowSize == size, let note = row[1], let (body, signatures) = SignedNote.parse(note),
                      let checkpoint = Checkpoint(body: body) else {
                    return "the checkpoint stored for size \(rowSize) is malformed: edited"
                }
                guard checkpoint.origin == origin, checkpoint.size == size, checkpoint.root == root else {
                    return "the checkpoint of size \(size) names another root than the log's entries give: the log was "
                        + "rewritten after it was made"
                }
                signedSize = size
                if let shipment = lastShipment, machine == nil || shipment.machine == machine {
                    let name = SignedNote.keyName(shipment.machine)
                    let id = SignedNote.keyID(name: name, type: SignedNote.ed25519, publicKey: shipment.publicKey)
                    let signed = signatures.contains {
                        $0.name == name && $0.keyID == id
                            && SignedNote.isValid($0.payload, of: Array(body.utf8), publicKey: shipment.publicKey)
                    }
                    if !signed {
                        return "the checkpoint of size \(size) is not signed by machine \(shipment.machine), whose "
                            + "shipment made it: forged"
                    }
                }
            }
            while let kept = held.first, kept.size <= size {
                held = held.dropFirst()
                if kept.size == size, kept.root != root || kept.origin != origin {
                    return "the log no longer matches the checkpoint you hold for size \(size): it was rewritten"
                }
            }
            while let cosigned = pendingCosignatures.first, cosigned.size <= size {
                pendingCosignatures = pendingCosignatures.dropFirst()
                guard cosigned.size == size else { continue }
                let body = Checkpoint(origin: origin, size: size, root: root).body
                guard let signature = SignedNote.parse("x\n\n" + cosigned.line)?.signatures.first,
                      cosigned.witness.cosignatureTime(signature, body: body) != nil else {
                    return "witness \(cosigned.witness.name)'s cosignature of size \(size) does not match the log: the log "
                        + "was rewritten after the witness saw it (or the cosignature was forged)"
                }
                vouched[cosigned.witness.name] = max(vouched[cosigned.witness.name] ?? 0, size)
            }
            return nil
        }

        try connection.transaction { () throws(ServiceError) in
            try connection.execute("""
                DECLARE log_walk NO SCROLL CURSOR FOR
                SELECT leaf, kind, machine, trail, first_seq, last_seq, body FROM log_entries ORDER BY leaf
                """)
            try connection.execute("DECLARE checkpoint_walk NO SCROLL CURSOR FOR SELECT size, note FROM checkpoints ORDER BY size")
            var checkpointRows: ArraySlice<[String?]> = []
            var checkpointsDone = false
            func refill() throws(ServiceError) {
                if checkpointRows.isEmpty, !checkpointsDone {
                    checkpointRows = try connection.execute("FETCH \(Self.fetchSize) FROM checkpoint_walk").rows[...]
                    checkpointsDone = checkpointRows.isEmpty
                }
            }
            walking: while true {
                let rows = try connection.execute("FETCH \(Self.fetchSize) FROM log_walk").rows
                if rows.isEmpty { break }
                for row in rows {
                    let leaf = row[0].flatMap { Int64($0) } ?? -1
                    guard leaf == tree.size else {
                        problem = leaf > tree.size
                            ? "entries \(tree.size)…\(leaf - 1) of the fleet log are missing: deleted"
                            : "entry \(leaf) of the fleet log is malformed: edited"
                        break walking
                    }
                    guard let body = row[6], let entry = FleetEntry(text: body) else {
                        problem = "entry \(leaf) of the fleet log is not an entry: edited"
                        break walking
                    }
                    switch entry {
                    case .shipment(let shipment):
                        guard row[1] == "shipment", row[2] == shipment.machine, Bytea.bytes(row[3]) == shipment.trail,
                              row[4] == String(shipment.first), row[5] == String(shipment.last) else {
                            problem = "entry \(leaf) of the fleet log is filed under other columns than its text says: edited"
                            break walking
                        }
                        lastShipment = shipment
                    case .registration(let registration):
                        guard row[1] == "registration", row[2] == registration.machine else {
                            problem = "entry \(leaf) of the fleet log is filed under other columns than its text says: edited"
                            break walking
                        }
                        if let enrollment = trust.enrollment {
                            guard entry.isRegistration(by: enrollment) else {
                                problem = "entry \(leaf) registers key \(Hex.encode(registration.publicKey)) for machine "
                                    + "\(registration.machine) without the enrollment key's signature: forged"
                                break walking
                            }
                        }
                        registered[registration.machine, default: []].insert(registration.publicKey)
                        registrations.append(.init(machine: registration.machine, key: Hex.encode(registration.publicKey),
                                                   entry: leaf, time: Date(timeIntervalSince1970: Double(registration.time))))
                        lastShipment = nil
                    }
                    let completed = tree.append(entry.leafHash)
                    nodeCount += completed.count
                    pendingNodes += completed
                    try refill()
                    while true {
                        if let found = checkAtSize(&checkpointRows) {
                            problem = found
                            break walking
                        }
                        guard checkpointRows.isEmpty, !checkpointsDone else { break }
                        try refill()
                    }
                    // Every shipment is appended with its machine's signed checkpoint, in one
                    // transaction: an entry without one was put there by someone else.
                    if let shipment = lastShipment, signedSize != tree.size, machine == nil || shipment.machine == machine {
                        problem = "entry \(leaf) of the fleet log (a shipment of machine \(shipment.machine)) has no "
                            + "checkpoint signed by that machine: it was appended outside a shipment"
                        break walking
                    }
                }
                if problem == nil, let found = try compareNodes() {
                    problem = found
                    break walking
                }
            }
            if problem == nil {
                try refill()
                if let row = checkpointRows.first, let size = row[0].flatMap({ Int64($0) }) {
                    problem = "a checkpoint names \(size) entries but the log holds \(tree.size): entries were cut off its end"
                }
            }
            if problem == nil, let stored = Int(try connection.execute("SELECT count(*) FROM log_nodes").scalar ?? ""),
               stored != nodeCount {
                problem = "the log's tables hold \(stored) nodes where its \(tree.size) entries make \(nodeCount): nodes "
                    + "were added or removed outside an append"
            }
            try connection.execute("CLOSE log_walk")
            try connection.execute("CLOSE checkpoint_walk")
        }
        if problem == nil, let kept = held.first {
            problem = "you hold a checkpoint of \(kept.size) entries but the log holds \(tree.size): it was cut back"
        }
        if problem == nil, let cosigned = pendingCosignatures.first {
            problem = "witness \(cosigned.witness.name) cosigned the log at \(cosigned.size) entries but it holds "
                + "\(tree.size): it was cut back"
        }
        let report = FleetLogReport(size: tree.size, root: Data(tree.root).base64EncodedString(), checkpoints: checkpoints,
                                    status: problem == nil ? .intact : .broken, problem: problem,
                                    registrationsChecked: trust.enrollment != nil,
                                    witnesses: trust.witnesses.map { .init(name: $0.name, vouchedThrough: vouched[$0.name]) },
                                    registrations: registrations)
        return (report, registered)
    }

    /// The shipments the log holds of one trail, in order of their last record.
    func loggedShipments(machine: String, trail: [UInt8]) throws(ServiceError) -> [LoggedShipment] {
        try connection.execute("""
            SELECT leaf, body FROM log_entries WHERE kind = 'shipment' AND machine = $1 AND trail = $2
            ORDER BY last_seq, leaf
            """, [machine, Bytea.text(trail)]).rows.compactMap { row in
            guard let leaf = row[0].flatMap({ Int64($0) }), let body = row[1],
                  case .shipment(let shipment)? = FleetEntry(text: body) else { return nil }
            return LoggedShipment(leaf: leaf, shipment: shipment)
        }
    }

    /// Trails the log holds shipments of that the collector holds no row for: deleted.
    func vanishedTrails(machine: String?) throws(ServiceError) -> [FleetTrailReport] {
        try connection.execute("""
            SELECT e.machine, e.trail, min(e.first_seq), max(e.last_seq), count(*) FROM log_entries e
            WHERE e.kind = 'shipment' AND ($1::text IS NULL OR e.machine = $1)
              AND NOT EXISTS (SELECT 1 FROM trails t WHERE t.machine = e.machine AND t.trail = e.trail)
            GROUP BY e.machine, e.trail ORDER BY e.machine, e.trail
            """, [machine]).rows.map { row in
            FleetTrailReport(machine: row[0] ?? "?", trail: Bytea.bytes(row[1]).map(Hex.encode) ?? "?", records: 0,
                             first: nil, last: nil, signedThrough: nil, status: .broken,
                             problem: "the fleet log holds \(row[4] ?? "?") shipment(s) of this trail (records "
                                 + "\(row[2] ?? "?")…\(row[3] ?? "?")) but the collector holds none of it: deleted")
        }
    }
}

extension FleetCollector {
    /// A witness's round: takes the log's newest checkpoint, checks that it is the tree the
    /// log's nodes give and that it extends `previous` (the checkpoint this witness
    /// cosigned last, kept by the witness outside the database), then cosigns it
    /// (`cosignature/v1`) and files the cosignature in the database. Returns the checkpoint.
    /// - Throws: ``ServiceError`` `audit-broken` when the log was cut, rewritten or
    ///   replaced since `previous`: nothing is cosigned.
    public func witness(signer: NoteSigner, previous: Checkpoint?, now: Date = Date()) throws(ServiceError) -> Checkpoint {
        let store = FleetLogStore(connection)
        let (_, note) = try store.newestCheckpoint()
        guard let body = SignedNote.parse(note)?.body, let checkpoint = Checkpoint(body: body) else {
            throw ServiceError(.auditBroken, "the collector's newest checkpoint is malformed: the log was edited; not cosigned")
        }
        let frontier = try store.hashes(MerkleTree.frontier(size: checkpoint.size))
        let root: [UInt8]
        do throws(MerkleTree.MissingNode) {
            root = try MerkleTree.rangeHash(0, checkpoint.size, FleetLogStore.lookup(frontier))
        } catch {
            throw FleetLogStore.missing(error)
        }
        guard root == checkpoint.root else {
            throw ServiceError(.auditBroken, "the collector's newest checkpoint (\(checkpoint.size) entries) names another "
                               + "root than its own tree: the log was edited; not cosigned")
        }
        if let previous {
            guard previous.origin == checkpoint.origin else {
                throw ServiceError(.auditBroken, "the collector's log is another log (\(checkpoint.origin)) than the one "
                                   + "this witness cosigned (\(previous.origin)): it was replaced; not cosigned")
            }
            guard checkpoint.size >= previous.size else {
                throw ServiceError(.auditBroken, "the collector's log holds \(checkpoint.size) entries, fewer than the "
                                   + "\(previous.size) this witness cosigned: it was cut back; not cosigned")
            }
            let proof = try store.consistencyProof(old: previous.size, size: checkpoint.size)
            guard MerkleTree.verifyConsistency(old: previous.size, oldRoot: previous.root, size: checkpoint.size,
                                               root: checkpoint.root, proof: proof) else {
                throw ServiceError(.auditBroken, "the collector's log (\(checkpoint.size) entries) does not extend the "
                                   + "one this witness cosigned (\(previous.size) entries): entries were changed or "
                                   + "removed; not cosigned")
            }
        }
        // The entries it has not seen yet must be the leaves the tree holds: a witness vouches
        // for what the log says, not only for its hashes.
        try store.checkEntries(from: previous?.size ?? 0, to: checkpoint.size)
        guard checkpoint.size > 0 else { return checkpoint }
        let line = signer.cosign(checkpoint.body, time: UInt64(max(0, now.timeIntervalSince1970)))
        let stored = try connection.execute("""
            INSERT INTO cosignatures (witness, size, line) VALUES ($1, $2, $3)
            ON CONFLICT (witness, size) DO UPDATE SET line = excluded.line, received = now()
            """, [signer.name, String(checkpoint.size), line]).affected
        guard stored == 1 else {
            throw ServiceError(.auditBroken, "the database did not store the cosignature (a rule or trigger on "
                               + "cosignatures swallowed it): it was tampered with; the state file is left as it was")
        }
        return checkpoint
    }

    /// The proofs a machine checks after a shipment (``AuditCollector/proofs(leaf:from:)``),
    /// for an auditor's own tools.
    public func proofs(leaf: Int64?, from old: Int64?) throws(ServiceError) -> FleetProofs {
        try FleetLogStore(connection).proofs(leaf: leaf, from: old)
    }

    /// The log's newest checkpoint, as stored (a signed note).
    public func newestCheckpoint() throws(ServiceError) -> String {
        try FleetLogStore(connection).newestCheckpoint().note
    }
}
