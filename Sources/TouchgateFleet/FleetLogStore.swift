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

    /// The key of the transaction-scoped advisory lock every append holds: appends to the
    /// one tree are serialised, while records of different machines go in side by side.
    static let appendLock = "7301955104"

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

    /// How long an append waits for the append lock before giving up: a session that took
    /// it and went silent (a stalled shipper, or anyone with the credentials holding it on
    /// purpose) must not stop every machine's shipping for good.
    static let lockTimeout = "15s"

    /// Takes the append lock for the rest of the caller's transaction, waiting at most
    /// ``lockTimeout`` (then `collector-unavailable`: the records stay queued).
    private func lock() throws(ServiceError) {
        try connection.execute("SET LOCAL lock_timeout = '\(Self.lockTimeout)'")
        try connection.execute("SELECT pg_advisory_xact_lock(\(Self.appendLock))")
    }

    /// Appends `entry` unless the log already names the same shipment; returns its index.
    /// Inside the caller's transaction; holds the append lock until it ends.
    func append(_ entry: FleetEntry.Shipment, accepted: Int64?,
                signCheckpoint: (Checkpoint, [[UInt8]]) throws(ServiceError) -> String) throws(ServiceError) -> Int64 {
        try lock()
        for row in try connection.execute("""
            SELECT leaf, body FROM log_entries WHERE machine = $1 AND trail = $2 AND last_seq = $3 ORDER BY leaf
            """, [entry.machine, Bytea.text(entry.trail), String(entry.last)]).rows {
            if let leaf = row[0].flatMap({ Int64($0) }), let body = row[1], case .shipment(let held)? = FleetEntry(text: body),
               held.chain == entry.chain, held.publicKey == entry.publicKey, held.first <= entry.first {
                return leaf
            }
        }
        return try appendLeaf(.shipment(entry)) { checkpoint throws(ServiceError) in
            // The machine signs only a tree it has checked extends the one it accepted before.
            let proof = try accepted.map { old throws(ServiceError) in
                try consistencyProof(old: old, size: checkpoint.size)
            } ?? []
            return try signCheckpoint(checkpoint, proof)
        }
    }

    /// Appends a key registration (the administrator's, through `touchgate-collector
    /// register`) with an unsigned checkpoint; returns its index.
    func append(registration: FleetEntry) throws(ServiceError) -> Int64 {
        try lock()
        return try appendLeaf(registration) { _ throws(ServiceError) in "" }
    }

    /// Appends `entry` as the next leaf (the lock held): the entry's row, the nodes it
    /// completes and the checkpoint after it, with the signature line `sign` gives.
    private func appendLeaf(_ entry: FleetEntry,
                            sign: (Checkpoint) throws(ServiceError) -> String) throws(ServiceError) -> Int64 {
        var tree = try self.tree()
        let size = tree.size
        let text = entry.text
        let completed = tree.append(MerkleTree.leafHash(Array(text.utf8)))
        switch entry {
        case .shipment(let shipment):
            try connection.execute("""
                INSERT INTO log_entries (leaf, kind, machine, trail, first_seq, last_seq, body)
                VALUES ($1, 'shipment', $2, $3, $4, $5, $6)
                """, [String(size), shipment.machine, Bytea.text(shipment.trail), String(shipment.first),
                      String(shipment.last), text])
        case .registration(let registration):
            try connection.execute("""
                INSERT INTO log_entries (leaf, kind, machine, body) VALUES ($1, 'registration', $2, $3)
                """, [String(size), registration.machine, text])
        }
        try insert(completed)
        let checkpoint = Checkpoint(origin: try origin(), size: tree.size, root: tree.root)
        let signer: String
        switch entry {
        case .shipment(let shipment): signer = shipment.machine
        case .registration: signer = ""
        }
        try connection.execute("INSERT INTO checkpoints (size, note, signer) VALUES ($1, $2, $3)",
                               [String(tree.size), checkpoint.body + "\n" + (try sign(checkpoint)), signer])
        return size
    }

    /// The tree as stored, ready to grow: its size and frontier.
    private func tree() throws(ServiceError) -> MerkleTree.Builder {
        let size = try size()
        let frontier = MerkleTree.frontier(size: size)
        let found = try hashes(frontier)
        var hashes: [[UInt8]] = []
        for node in frontier {
            guard let hash = found[node] else { throw Self.missing(MerkleTree.MissingNode(node: node)) }
            hashes.append(hash)
        }
        return MerkleTree.Builder(size: size, frontier: hashes)
    }

    private func insert(_ nodes: [(MerkleTree.Node, [UInt8])]) throws(ServiceError) {
        var values: [String] = []
        var parameters: [String?] = []
        for (node, hash) in nodes {
            values.append("($\(parameters.count + 1)::smallint, $\(parameters.count + 2)::bigint, $\(parameters.count + 3)::bytea)")
            parameters += [String(node.level), String(node.index), Bytea.text(hash)]
        }
        try connection.execute("INSERT INTO log_nodes (level, idx, hash) VALUES " + values.joined(separator: ", "),
                               parameters)
    }

    /// The newest checkpoint's note; an empty log's unsigned checkpoint when there is none.
    func newestCheckpoint() throws(ServiceError) -> (size: Int64, note: String) {
        if let row = try connection.execute("SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1").rows.first {
            guard let size = row[0].flatMap({ Int64($0) }), MerkleTree.isValid(size: size), let note = row[1] else {
                throw Self.edited("its newest checkpoint's size is out of range")
            }
            return (size, note)
        }
        return (0, Checkpoint(origin: try origin(), size: 0, root: MerkleTree.emptyRoot).body + "\n")
    }

    /// The proofs ``AuditCollector/proofs(leaf:from:)`` promises, against the newest checkpoint.
    func proofs(leaf: Int64?, from old: Int64?) throws(ServiceError) -> FleetProofs {
        let (size, note) = try newestCheckpoint()
        let leaf = leaf.flatMap { $0 >= 0 && $0 < size ? $0 : nil }
        let old = old.flatMap { $0 >= 0 && $0 <= size ? $0 : nil }
        let lookup = Self.lookup(try hashes(MerkleTree.nodesForProofs(index: leaf, old: old, size: size)))
        var entry: String?
        if let leaf { entry = try connection.execute("SELECT body FROM log_entries WHERE leaf = $1", [String(leaf)]).scalar }
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
