import FoundationEssentials
import TouchgatePolicy
import TouchgateShipping
import TouchgateVault
import TouchgateAPI

/// The fleet log's tables on one connection: appending an entry, reading checkpoints and
/// nodes, making proofs. Stateless; every call is a few statements.
///
/// The tree's perfect subtrees are stored in `log_nodes` once complete (a leaf's hash at
/// level 0, and each parent as the append that completes it writes it), so an append
/// reads the O(log n) nodes of the frontier and writes about two rows, and a proof reads
/// O(log n) rows.
struct FleetLogStore {
    let connection: PostgresConnection

    init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    /// The log's origin line, made by `touchgate-collector init`.
    func origin() throws(ServiceError) -> String {
        guard let origin = try connection.execute("SELECT origin FROM fleet_log").scalar,
              origin.hasPrefix(Checkpoint.originPrefix) else {
            throw ServiceError(.auditBroken, "the collector's fleet log has no origin (table fleet_log is empty or "
                               + "edited): the database was tampered with or not set up (touchgate-collector init)")
        }
        return origin
    }

    /// The number of entries (leaves) in the tree.
    func size() throws(ServiceError) -> Int64 {
        let size = Int64(try connection.execute("SELECT coalesce(max(idx) + 1, 0) FROM log_nodes WHERE level = 0").scalar ?? "") ?? -1
        guard MerkleTree.isValid(size: size) else { throw Self.edited("its leaves' indices are out of range") }
        return size
    }

    /// The log's tables hold what no append writes.
    static func edited(_ what: String) -> ServiceError {
        ServiceError(.auditBroken, "the collector's fleet log is malformed (\(what)): its tables were edited, by the "
                     + "database's administrator or with a machine's credentials")
    }

    /// The stored hashes of `nodes`.
    func hashes(_ nodes: some Collection<MerkleTree.Node>) throws(ServiceError) -> [MerkleTree.Node: [UInt8]] {
        guard !nodes.isEmpty else { return [:] }
        let levels = "{" + nodes.map { String($0.level) }.joined(separator: ",") + "}"
        let indices = "{" + nodes.map { String($0.index) }.joined(separator: ",") + "}"
        var found: [MerkleTree.Node: [UInt8]] = [:]
        for row in try connection.execute("""
            SELECT n.level, n.idx, n.hash FROM log_nodes n
            JOIN unnest($1::smallint[], $2::bigint[]) AS wanted (level, idx) ON n.level = wanted.level AND n.idx = wanted.idx
            """, [levels, indices]).rows {
            if let level = row[0].flatMap({ Int($0) }), let index = row[1].flatMap({ Int64($0) }),
               let hash = Bytea.bytes(row[2]), hash.count == MerkleTree.hashLength {
                found[MerkleTree.Node(level: level, index: index)] = hash
            }
        }
        return found
    }

    /// A lookup over `found` that reports a node the log should hold and does not.
    static func lookup(_ found: [MerkleTree.Node: [UInt8]]) -> (MerkleTree.Node) throws(MerkleTree.MissingNode) -> [UInt8] {
        { node throws(MerkleTree.MissingNode) in
            guard let hash = found[node] else { throw MerkleTree.MissingNode(node: node) }
            return hash
        }
    }

    static func missing(_ error: MerkleTree.MissingNode) -> ServiceError {
        ServiceError(.auditBroken, "the collector's fleet log lacks its node at level \(error.node.level), index "
                     + "\(error.node.index): the log's tables were edited")
    }

    /// Has the collector's definer function append `batch` (a machine's signed head) unless
    /// the log already names the same batch; returns its index. Inside the caller's
    /// transaction, after the rows it names were stored; the function holds the append lock
    /// until the transaction ends (waiting for it at most 15 s: then `collector-unavailable`,
    /// the records stay queued). A state of the log no append can make is `audit-broken`.
    ///
    /// `span` is the first and last `unix_time` of the batch's records, when the caller has
    /// them all: the function's checks then read the months they are in, not every month.
    func append(batch: FleetEntry.Batch, span: ClosedRange<Double>? = nil) throws(ServiceError) -> Int64 {
        let shipment = batch.shipment
        guard let leaf = Int64(try connection.execute("SELECT touchgate_ship_batch($1, $2, $3, $4, $5, $6, $7)", [
            shipment.machine, Bytea.text(shipment.trail), String(shipment.first), String(shipment.last), batch.note,
            span.map { PostgresCollector.exact($0.lowerBound) } ?? "-Infinity",
            span.map { PostgresCollector.exact($0.upperBound) } ?? "Infinity",
        ]).scalar ?? ""), MerkleTree.isValid(size: leaf) else { throw Self.edited("an append gave no index") }
        return leaf
    }

    /// Appends a key registration (the administrator's, through `touchgate-collector
    /// register`) through the same function; returns its index.
    func append(registration: FleetEntry) throws(ServiceError) -> Int64 {
        guard case .registration(let registration) = registration else { preconditionFailure("not a registration") }
        guard let leaf = Int64(try connection.execute("""
            SELECT touchgate_log_append('registration', $1, NULL, NULL, NULL, $2)
            """, [registration.machine, registration.note]).scalar ?? ""), MerkleTree.isValid(size: leaf)
        else { throw Self.edited("an append gave no index") }
        return leaf
    }

    /// The tree as stored: its size and root, from its frontier's nodes.
    func head() throws(ServiceError) -> Checkpoint {
        let size = try size()
        let found = try hashes(MerkleTree.frontier(size: size))
        let origin = try origin()
        do throws(MerkleTree.MissingNode) {
            return Checkpoint(origin: origin, size: size, root: try MerkleTree.rangeHash(0, size, Self.lookup(found)))
        } catch {
            throw Self.missing(error)
        }
    }

    /// The tree head as a checkpoint note: the one stored for its size when it names this
    /// head (signed by the log's key, `touchgate-collector publish`, or from schema 2 by the
    /// machine whose shipment made it), else the head unsigned (a body and a blank line).
    func newestCheckpoint() throws(ServiceError) -> (size: Int64, note: String) {
        let head = try head()
        if let note = try connection.execute("SELECT note FROM checkpoints WHERE size = $1", [String(head.size)]).scalar,
           SignedNote.parse(note)?.body == head.body {
            return (head.size, note)
        }
        return (head.size, head.body + "\n")
    }

    /// The proofs ``AuditCollector/proofs(leaf:from:)`` promises, against the newest checkpoint.
    func proofs(leaf: Int64?, from old: Int64?) throws(ServiceError) -> FleetProofs {
        let (size, note) = try newestCheckpoint()
        if let leaf, leaf < 0 || leaf >= size {
            throw ServiceError(.notFound, "the fleet log holds \(size) entries (0…\(size - 1)): there is no entry \(leaf)")
        }
        if let old, old > size {
            throw ServiceError(.auditBroken, "the collector's fleet log holds \(size) entries, fewer than the \(old) of "
                               + "the checkpoint to prove consistency from: it was cut back")
        }
        if let old, old < 0 { throw ServiceError(.usage, "a log size is 0 or more, not \(old)") }
        let lookup = Self.lookup(try hashes(MerkleTree.nodesForProofs(index: leaf, old: old, size: size)))
        var entry: String?
        if let leaf {
            // No proof for an entry that is not there: a leaf without its entry, or with
            // another text than its hash, is a damaged log, not a proof of anything.
            entry = try connection.execute("SELECT body FROM log_entries WHERE leaf = $1", [String(leaf)]).scalar
            guard let entry, try hashes([MerkleTree.Node(level: 0, index: leaf)]).first?.value
                    == MerkleTree.leafHash(Array(entry.utf8)) else {
                throw Self.edited("entry \(leaf) is " + (entry == nil ? "missing, though its tree holds a leaf there"
                                                          : "not the leaf its tree holds: the entry was changed"))
            }
        }
        do throws(MerkleTree.MissingNode) {
            var inclusion: [[UInt8]] = []
            if let leaf { inclusion = try MerkleTree.inclusionProof(index: leaf, size: size, lookup) }
            var consistency: [[UInt8]] = []
            if let old { consistency = try MerkleTree.consistencyProof(old: old, size: size, lookup) }
            return FleetProofs(checkpoint: note, entry: entry, inclusion: inclusion, consistency: consistency)
        } catch {
            throw Self.missing(error)
        }
    }

    /// The consistency proof from the tree of `old` entries to the tree of `size` entries.
    func consistencyProof(old: Int64, size: Int64) throws(ServiceError) -> [[UInt8]] {
        guard old >= 0, old <= size, MerkleTree.isValid(size: size) else { return [] }
        let lookup = Self.lookup(try hashes(MerkleTree.nodesForProofs(index: nil, old: old, size: size)))
        do {
            return try MerkleTree.consistencyProof(old: old, size: size, lookup)
        } catch {
            throw Self.missing(error)
        }
    }

    /// Checks that entries `from..<to` are the leaves the stored tree holds: each entry's
    /// hash is its level-0 node. Reads them in slices, so memory stays flat.
    /// - Throws: ``ServiceError`` `audit-broken` naming the first entry that differs or is missing.
    func checkEntries(from: Int64, to: Int64) throws(ServiceError) {
        var next = from
        while next < to {
            let rows = try connection.execute("""
                SELECT leaf, body FROM log_entries WHERE leaf >= $1 AND leaf < $2 ORDER BY leaf LIMIT 20000
                """, [String(next), String(to)]).rows
            let leaves = try hashes((next..<min(to, next + 20_000)).map { MerkleTree.Node(level: 0, index: $0) })
            for row in rows {
                guard row[0] == String(next), let body = row[1] else {
                    throw Self.edited("entry \(next) is missing")
                }
                guard leaves[MerkleTree.Node(level: 0, index: next)] == MerkleTree.leafHash(Array(body.utf8)) else {
                    throw Self.edited("entry \(next) is not the leaf its tree holds: the entry was changed")
                }
                next += 1
            }
            if rows.isEmpty { throw Self.edited("entry \(next) is missing") }
        }
    }
}
