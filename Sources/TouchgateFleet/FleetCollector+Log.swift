public import FoundationEssentials
import TouchgatePolicy
public import TouchgateShipping
import TouchgateVault
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
    /// How many of ``witnesses`` must have cosigned one size of the log (0: none need to).
    /// Without it, a database administrator can show an auditor a branch of the log of its
    /// own (a fork) that no witness but one of the administrator's choosing ever saw.
    public var quorum: Int
    /// The log's key (`touchgate-collector publish`): checkpoints under its name must be its.
    public var log: NoteVerifier?

    public init(enrollment: NoteVerifier? = nil, witnesses: [NoteVerifier] = [], checkpoints: [Checkpoint] = [],
                quorum: Int = 0, log: NoteVerifier? = nil) {
        self.enrollment = enrollment
        self.witnesses = witnesses
        self.checkpoints = checkpoints
        self.quorum = quorum
        self.log = log
    }
}

/// A shipment or batch head entry of the log, with its index; `signed` is false for a batch
/// head that is not signed by the key it names (forged).
struct LoggedShipment {
    var leaf: Int64
    var shipment: FleetEntry.Shipment
    var signed = true
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
        /// The witnesses whose valid cosignature each size has.
        var cosignedBy: [Int64: Set<String>] = [:]
        var logSigned = 0
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
                if let log = trust.log, signatures.contains(where: { $0.name == log.name }) {
                    guard log.verifiedBody(note) == body else {
                        return "the checkpoint of size \(size) is not signed by the log's key \(log.name): forged"
                    }
                    logSigned += 1
                }
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
                cosignedBy[size, default: []].insert(cosigned.witness.name)
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
                    case .batch(let batch):
                        let shipment = batch.shipment
                        guard row[1] == "batch", row[2] == shipment.machine, Bytea.bytes(row[3]) == shipment.trail,
                              row[4] == String(shipment.first), row[5] == String(shipment.last) else {
                            problem = "entry \(leaf) of the fleet log is filed under other columns than its text says: edited"
                            break walking
                        }
                        // Its machine's signature is in the entry itself (checked with its trail).
                        lastShipment = nil
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
        // With a quorum, the log as this auditor sees it must be the one the witnesses saw:
        // its head cosigned by enough of them. A branch shown to this auditor alone (a fork)
        // never gets an honest witness's cosignature past the point where it split.
        var witnessed: Int64?
        if trust.quorum > 0 {
            witnessed = cosignedBy.filter { $0.value.count >= trust.quorum }.keys.max()
            if problem == nil, tree.size > 0, witnessed != tree.size {
                let through = trust.witnesses.map { "\($0.name) through \(vouched[$0.name].map(String.init) ?? "none")" }
                problem = "the log's head (\(tree.size) entries) is not cosigned by \(trust.quorum) of the witnesses given "
                    + "(" + through.joined(separator: ", ") + "; all \(trust.quorum) together through "
                    + (witnessed.map(String.init) ?? "none") + "): run the witnesses (touchgate-collector witness) and "
                    + "verify again; a witness that then refuses saw another branch of this log (a fork)"
            }
        }
        var report = FleetLogReport(size: tree.size, root: Data(tree.root).base64EncodedString(), checkpoints: checkpoints,
                                    status: problem == nil ? .intact : .broken, problem: problem,
                                    registrationsChecked: trust.enrollment != nil,
                                    witnesses: trust.witnesses.map { .init(name: $0.name, vouchedThrough: vouched[$0.name]) },
                                    registrations: registrations)
        if trust.quorum > 0 {
            report.quorum = trust.quorum
            report.witnessedThrough = witnessed
        }
        if trust.log != nil { report.logSigned = logSigned }
        return (report, registered)
    }

    /// The shipments the log holds of one trail, in order of their last record.
    func loggedShipments(machine: String, trail: [UInt8]) throws(ServiceError) -> [LoggedShipment] {
        try connection.execute("""
            SELECT leaf, body FROM log_entries WHERE kind IN ('shipment', 'batch') AND machine = $1 AND trail = $2
            ORDER BY last_seq, leaf
            """, [machine, Bytea.text(trail)]).rows.compactMap { row in
            guard let leaf = row[0].flatMap({ Int64($0) }), let body = row[1], let entry = FleetEntry(text: body),
                  let shipment = entry.shipped else { return nil }
            if case .batch = entry { return LoggedShipment(leaf: leaf, shipment: shipment, signed: entry.isSignedBatch) }
            return LoggedShipment(leaf: leaf, shipment: shipment)
        }
    }

    /// Trails the log holds shipments of that the collector holds no row for: deleted.
    func vanishedTrails(machine: String?) throws(ServiceError) -> [FleetTrailReport] {
        try connection.execute("""
            SELECT e.machine, e.trail, min(e.first_seq), max(e.last_seq), count(*) FROM log_entries e
            WHERE e.kind IN ('shipment', 'batch') AND ($1::text IS NULL OR e.machine = $1)
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
    /// The log's tree head, once checked to extend `previous` (a checkpoint vouched for
    /// earlier, kept outside the database) and to hold, past it, the entries its leaves
    /// hash: what a witness cosigns and the log's key signs.
    /// - Throws: ``ServiceError`` `audit-broken` (`who` is not given the head) when the log
    ///   was cut, rewritten or replaced since `previous`.
    func checkedHead(since previous: Checkpoint?, who: String) throws(ServiceError) -> Checkpoint {
        let store = FleetLogStore(connection)
        let head = try store.head()
        if let previous {
            guard previous.origin == head.origin else {
                throw ServiceError(.auditBroken, "log damaged: the collector's log is another log (\(head.origin)) than "
                                   + "the one \(who) (\(previous.origin)): it was replaced")
            }
            guard head.size >= previous.size else {
                throw ServiceError(.auditBroken, "log damaged: the collector's log holds \(head.size) entries, fewer than "
                                   + "the \(previous.size) \(who): it was cut back")
            }
            let proof = try store.consistencyProof(old: previous.size, size: head.size)
            guard MerkleTree.verifyConsistency(old: previous.size, oldRoot: previous.root, size: head.size,
                                               root: head.root, proof: proof) else {
                throw ServiceError(.auditBroken, "log damaged: the collector's log (\(head.size) entries) does not extend "
                                   + "the one \(who) (\(previous.size) entries): entries were changed or removed")
            }
        }
        // The entries not vouched for yet must be the leaves the tree holds: what is vouched
        // for is what the log says, not only its hashes.
        try store.checkEntries(from: previous?.size ?? 0, to: head.size)
        return head
    }

    /// A witness's round: takes the log's tree head, checks it (``checkedHead(since:who:)``)
    /// against `previous` (the checkpoint this witness cosigned last, kept by the witness
    /// outside the database), then cosigns it (`cosignature/v1`) and files the cosignature
    /// in the database. Returns the checkpoint.
    /// - Throws: ``ServiceError`` `audit-broken` when the log was cut, rewritten or
    ///   replaced since `previous`: nothing is cosigned.
    public func witness(signer: NoteSigner, previous: Checkpoint?, now: Date = Date()) throws(ServiceError) -> Checkpoint {
        let checkpoint: Checkpoint
        do throws(ServiceError) {
            checkpoint = try checkedHead(since: previous, who: "this witness cosigned")
        } catch {
            throw ServiceError(error.code, error.message + "; not cosigned")
        }
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

    /// Signs the log's tree head with the log's key (a C2SP checkpoint), after checking it
    /// extends the newest checkpoint that key signed before (``checkedHead(since:who:)``),
    /// and files it in `checkpoints`; asks each of `witnesses` to cosign it by the C2SP
    /// tlog-witness protocol and files their cosignatures; with `tiles`, also writes the log
    /// there as C2SP tlog-tiles (``FleetTiles``), its `checkpoint` carrying the witnesses'
    /// cosignatures of that size. Returns the checkpoint note, how many tile files were
    /// written, and each witness's outcome. A witness exchange takes `witnessTimeout`
    /// seconds at most, whole.
    /// - Throws: ``ServiceError`` `audit-broken` when the log no longer extends what the
    ///   key signed: nothing is signed.
    public func publish(signer: NoteSigner, tiles: String?, witnesses: [(url: String, key: NoteVerifier)] = [],
                        witnessTimeout: Int = 30) throws(ServiceError) -> FleetPublication {
        let verifier = NoteVerifier(name: signer.name, type: signer.type, publicKey: signer.publicKey)
        var previous: Checkpoint?
        for row in try connection.execute("SELECT note FROM checkpoints WHERE strpos(note, $1) > 0 ORDER BY size DESC",
                                          ["\n\u{2014} " + signer.name + " "]).rows {
            if let note = row[0], let body = verifier.verifiedBody(note), let checkpoint = Checkpoint(body: body) {
                previous = checkpoint
                break
            }
        }
        let head: Checkpoint
        do throws(ServiceError) {
            head = try checkedHead(since: previous, who: "the log's key signed last")
        } catch {
            throw ServiceError(error.code, error.message + "; not signed")
        }
        var note = signer.signNote(head.body)
        if head.size > 0 {
            // One row a size: a schema-2 checkpoint of that size (signed by a machine) keeps
            // its signature and gains the log's.
            let held = try connection.execute("SELECT note FROM checkpoints WHERE size = $1", [String(head.size)]).scalar
            if let held, SignedNote.parse(held)?.body == head.body {
                note = verifier.verifiedBody(held) != nil ? held : held + signer.signatureLine(Array(head.body.utf8))
            }
            try connection.execute("""
                INSERT INTO checkpoints (size, note, signer) VALUES ($1, $2, $3)
                ON CONFLICT (size) DO UPDATE SET note = excluded.note
                """, [String(head.size), note, signer.name])
        }
        var witnessed: [(name: String, failure: ServiceError?)] = []
        if head.size > 0 {
            for witness in witnesses {
                do throws(ServiceError) {
                    try cosign(WitnessClient(url: witness.url, verifier: witness.key, timeout: witnessTimeout), note: note,
                               head: head)
                    witnessed.append((witness.key.name, nil))
                } catch {
                    witnessed.append((witness.key.name, error))
                }
            }
        }
        guard let tiles else { return FleetPublication(note: note, files: 0, witnessed: witnessed) }
        let cosignatures = try connection.execute("SELECT line FROM cosignatures WHERE size = $1 ORDER BY witness",
                                                  [String(head.size)]).rows.compactMap { $0[0] }
        let files = try FleetTiles(store: FleetLogStore(connection), directory: tiles)
            .write(size: head.size, checkpoint: note + cosignatures.joined())
        return FleetPublication(note: note + cosignatures.joined(), files: files, witnessed: witnessed)
    }

    /// Has `witness` cosign `head` (signed as `note`) by tlog-witness's add-checkpoint,
    /// from the size it cosigned last (as the database remembers it; once more from the
    /// size the witness names, when it says it is another), and files the cosignature.
    private func cosign(_ witness: WitnessClient, note: String, head: Checkpoint) throws(ServiceError) {
        let store = FleetLogStore(connection)
        var old = Int64(try connection.execute("SELECT coalesce(max(size), 0) FROM cosignatures WHERE witness = $1",
                                               [witness.verifier.name]).scalar ?? "") ?? 0
        for attempt in 0..<2 {
            guard old <= head.size else {
                throw ServiceError(.auditBroken, "witness \(witness.verifier.name) cosigned \(old) entries of this log, "
                                   + "which now holds \(head.size): it was cut back")
            }
            let proof = old == 0 ? [] : try store.consistencyProof(old: old, size: head.size)
            switch try witness.addCheckpoint(note, checkpoint: head, old: old, proof: proof) {
            case .cosigned(let line):
                try connection.execute("""
                    INSERT INTO cosignatures (witness, size, line) VALUES ($1, $2, $3)
                    ON CONFLICT (witness, size) DO UPDATE SET line = excluded.line, received = now()
                    """, [witness.verifier.name, String(head.size), line])
                return
            case .conflict(let size) where attempt == 0:
                old = size
            case .conflict(let size):
                throw ServiceError(.collectorUnavailable, "witness \(witness.verifier.name) changed the size it names "
                                   + "twice (now \(size)): try again")
            }
        }
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

/// What ``FleetCollector/publish(signer:tiles:witnesses:witnessTimeout:)`` did.
public struct FleetPublication: Sendable {
    /// The checkpoint signed, with the cosignatures of its size.
    public var note: String
    /// Tile files written.
    public var files: Int
    /// Each witness asked, by name, and why it did not cosign (nil: it did).
    public var witnessed: [(name: String, failure: ServiceError?)]

    /// What the run as a whole failed with, if a witness did not cosign: a refusal (the log
    /// is not what that witness saw, `audit-broken`) outweighs a witness out of reach.
    public var failure: ServiceError? {
        let failures = witnessed.compactMap(\.failure)
        return failures.first(where: { $0.code == .auditBroken }) ?? failures.first
    }
}
