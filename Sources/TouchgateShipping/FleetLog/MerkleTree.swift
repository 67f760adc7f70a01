import CSodium
import FoundationEssentials
import TouchgatePolicy

/// RFC 9162's Merkle tree (§2.1): the hashing, the proofs and their checks, over a tree
/// whose nodes live elsewhere (the collector's database) and are looked up by id.
///
/// Hand-written: no Swift package implements RFC 9162 proofs, and the whole is a few
/// dozen lines of arithmetic over SHA-256 (libsodium's), checked in the tests against a
/// tree built naively for every size up to 70.
///
/// Every hash a proof needs is the root of a *perfect* subtree (2^level leaves starting at
/// a multiple of 2^level), or a combination of them along the tree's right edge; the
/// collector stores exactly the perfect ones, each once it is complete, so a proof reads
/// O(log n) stored nodes.
public enum MerkleTree {
    /// A perfect subtree: leaves `index << level` up to (not including) `(index + 1) << level`.
    public struct Node: Hashable, Sendable, Comparable {
        /// Height above the leaves (0: a leaf).
        public var level: Int
        /// Position among the nodes of its level.
        public var index: Int64

        public init(level: Int, index: Int64) {
            self.level = level
            self.index = index
        }

        public static func < (lhs: Node, rhs: Node) -> Bool {
            (lhs.level, lhs.index) < (rhs.level, rhs.index)
        }
    }

    /// A proof could not be made: the node store lacks a node it must hold.
    public struct MissingNode: Error, Sendable {
        public let node: Node

        public init(node: Node) {
            self.node = node
        }
    }

    /// Hash length in bytes (SHA-256).
    public static let hashLength = 32

    /// The largest tree this code handles: 2^48 entries (a shipment a millisecond for nine
    /// thousand years). Sizes and indices read from the database are checked against it
    /// before any arithmetic, so a hostile row cannot make the loops below overflow or spin.
    public static let maxSize: Int64 = 1 << 48

    /// Whether `size` is a tree size this code handles.
    public static func isValid(size: Int64) -> Bool { size >= 0 && size <= maxSize }

    /// The root of the empty tree: SHA-256 of nothing.
    public static var emptyRoot: [UInt8] { sha256([]) }

    /// `SHA-256(0x00 || data)`.
    public static func leafHash(_ data: [UInt8]) -> [UInt8] { sha256([0] + data) }

    /// `SHA-256(0x01 || left || right)`.
    public static func nodeHash(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] { sha256([1] + left + right) }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: hashLength)
        _ = sodium_init()
        crypto_hash_sha256(&digest, bytes, UInt64(bytes.count))
        return digest
    }

    /// The largest power of two smaller than `n` (n ≥ 2).
    static func split(_ n: Int64) -> Int64 {
        precondition(n <= maxSize, "tree sizes are checked against maxSize before use")
        var k: Int64 = 1
        while k << 1 < n { k <<= 1 }
        return k
    }

    // MARK: Which nodes

    /// The perfect subtrees whose hashes make up the hash of leaves `lo..<hi`, where the
    /// range is one that RFC 9162's recursion produces (`lo` a multiple of the largest
    /// power of two not above `hi - lo`), left to right.
    public static func pieces(_ lo: Int64, _ hi: Int64) -> [Node] {
        precondition(lo >= 0 && hi <= maxSize, "tree sizes are checked against maxSize before use")
        var nodes: [Node] = []
        var start = lo
        while start < hi {
            var level = 0
            while start % (Int64(1) << (level + 1)) == 0, start + (Int64(1) << (level + 1)) <= hi { level += 1 }
            nodes.append(Node(level: level, index: start >> level))
            start += Int64(1) << level
        }
        return nodes
    }

    /// The hash of leaves `lo..<hi` from the hashes of ``pieces(_:_:)``: RFC 9162's MTH
    /// over that range (the pieces shrink left to right, so the fold is from the right).
    public static func rangeHash(_ lo: Int64, _ hi: Int64,
                                 _ lookup: (Node) throws(MissingNode) -> [UInt8]) throws(MissingNode) -> [UInt8] {
        let nodes = pieces(lo, hi)
        guard var hash = try nodes.last.map(lookup) else { return emptyRoot }
        for node in nodes.dropLast().reversed() { hash = nodeHash(try lookup(node), hash) }
        return hash
    }

    /// The tree of `size` leaves' perfect subtrees, left to right: what its root is made of
    /// and what an append extends.
    public static func frontier(size: Int64) -> [Node] { pieces(0, size) }

    /// The ranges whose hashes form the inclusion proof of leaf `index` in a tree of `size`
    /// leaves (RFC 9162 §2.1.3.1), in proof order.
    static func inclusionRanges(index: Int64, size: Int64) -> [(Int64, Int64)] {
        var ranges: [(Int64, Int64)] = []
        func path(_ m: Int64, _ lo: Int64, _ hi: Int64) {
            let n = hi - lo
            guard n > 1 else { return }
            let k = split(n)
            if m < k {
                path(m, lo, lo + k)
                ranges.append((lo + k, hi))
            } else {
                path(m - k, lo + k, hi)
                ranges.append((lo, lo + k))
            }
        }
        path(index, 0, size)
        return ranges
    }

    /// The ranges whose hashes form the consistency proof from `old` leaves to `size`
    /// (RFC 9162 §2.1.4.1), in proof order.
    static func consistencyRanges(old: Int64, size: Int64) -> [(Int64, Int64)] {
        var ranges: [(Int64, Int64)] = []
        func subproof(_ m: Int64, _ lo: Int64, _ hi: Int64, _ whole: Bool) {
            let n = hi - lo
            if m == n {
                if !whole { ranges.append((lo, hi)) }
                return
            }
            let k = split(n)
            if m <= k {
                subproof(m, lo, lo + k, whole)
                ranges.append((lo + k, hi))
            } else {
                subproof(m - k, lo + k, hi, false)
                ranges.append((lo, lo + k))
            }
        }
        if old > 0, old < size { subproof(old, 0, size, true) }
        return ranges
    }

    /// The stored nodes an inclusion proof of `index` in `size`, and a consistency proof
    /// from `old` (nil: none) to `size`, read between them.
    public static func nodesForProofs(index: Int64?, old: Int64?, size: Int64) -> Set<Node> {
        var ranges = index.map { inclusionRanges(index: $0, size: size) } ?? []
        if let old { ranges += consistencyRanges(old: old, size: size) }
        return Set(ranges.flatMap { pieces($0.0, $0.1) })
    }

    /// The inclusion proof of leaf `index` in a tree of `size` leaves.
    public static func inclusionProof(index: Int64, size: Int64,
                                      _ lookup: (Node) throws(MissingNode) -> [UInt8]) throws(MissingNode) -> [[UInt8]] {
        var proof: [[UInt8]] = []
        for range in inclusionRanges(index: index, size: size) { proof.append(try rangeHash(range.0, range.1, lookup)) }
        return proof
    }

    /// The consistency proof from the tree of `old` leaves to the tree of `size` leaves.
    public static func consistencyProof(old: Int64, size: Int64,
                                        _ lookup: (Node) throws(MissingNode) -> [UInt8]) throws(MissingNode) -> [[UInt8]] {
        var proof: [[UInt8]] = []
        for range in consistencyRanges(old: old, size: size) { proof.append(try rangeHash(range.0, range.1, lookup)) }
        return proof
    }

    // MARK: Checking proofs (RFC 9162 §2.1.3.2 and §2.1.4.2)

    /// Whether `proof` shows the leaf hashed `leaf` at `index` in the tree of `size`
    /// leaves whose root is `root`.
    public static func verifyInclusion(leaf: [UInt8], index: Int64, size: Int64, proof: [[UInt8]],
                                       root: [UInt8]) -> Bool {
        guard index >= 0, index < size, size <= maxSize else { return false }
        var (fn, sn) = (index, size - 1)
        var hash = leaf
        for sibling in proof {
            guard sn > 0 else { return false }
            if fn & 1 == 1 || fn == sn {
                hash = nodeHash(sibling, hash)
                while fn & 1 == 0, fn != 0 {
                    fn >>= 1
                    sn >>= 1
                }
            } else {
                hash = nodeHash(hash, sibling)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 && hash == root
    }

    /// Whether `proof` shows that the tree of `old` leaves with root `oldRoot` is the start
    /// of the tree of `size` leaves with root `root`: nothing it held was changed or removed.
    public static func verifyConsistency(old: Int64, oldRoot: [UInt8], size: Int64, root: [UInt8],
                                         proof: [[UInt8]]) -> Bool {
        guard old >= 0, old <= size, size <= maxSize else { return false }
        if old == size { return proof.isEmpty && oldRoot == root }
        if old == 0 { return proof.isEmpty }
        var path = proof
        if old & (old - 1) == 0 { path.insert(oldRoot, at: 0) }
        guard let first = path.first else { return false }
        var (fn, sn) = (old - 1, size - 1)
        while fn & 1 == 1 {
            fn >>= 1
            sn >>= 1
        }
        var (oldHash, newHash) = (first, first)
        for sibling in path.dropFirst() {
            guard sn > 0 else { return false }
            if fn & 1 == 1 || fn == sn {
                oldHash = nodeHash(sibling, oldHash)
                newHash = nodeHash(sibling, newHash)
                while fn & 1 == 0, fn != 0 {
                    fn >>= 1
                    sn >>= 1
                }
            } else {
                newHash = nodeHash(newHash, sibling)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 && oldHash == oldRoot && newHash == root
    }

    // MARK: Growing

    /// A tree being computed leaf by leaf (an append, or a verifier recomputing the whole
    /// log): holds only the frontier, so its memory is O(log n).
    public struct Builder: Sendable {
        /// The frontier's hashes, largest subtree first.
        private var stack: [(level: Int, hash: [UInt8])] = []
        /// Leaves so far.
        public private(set) var size: Int64 = 0

        public init() {}

        /// Resumes a tree of `size` leaves from the hashes of its ``frontier(size:)``.
        public init(size: Int64, frontier: [[UInt8]]) {
            self.size = size
            stack = zip(MerkleTree.frontier(size: size), frontier).map { ($0.level, $1) }
        }

        /// Appends a leaf hash; returns every perfect subtree it completed (the leaf first),
        /// with its hash: the nodes a store must now hold.
        @discardableResult
        public mutating func append(_ leaf: [UInt8]) -> [(Node, [UInt8])] {
            var completed: [(Node, [UInt8])] = [(Node(level: 0, index: size), leaf)]
            var (level, hash, index) = (0, leaf, size)
            while let last = stack.last, last.level == level {
                stack.removeLast()
                hash = MerkleTree.nodeHash(last.hash, hash)
                level += 1
                index >>= 1
                completed.append((Node(level: level, index: index), hash))
            }
            stack.append((level, hash))
            size += 1
            return completed
        }

        /// The root of the tree so far.
        public var root: [UInt8] {
            guard var hash = stack.last?.hash else { return MerkleTree.emptyRoot }
            for node in stack.dropLast().reversed() { hash = MerkleTree.nodeHash(node.hash, hash) }
            return hash
        }
    }
}

/// SHA-256 over data given in pieces (libsodium's): an archive's file, hashed as it is written
/// or read, without holding it.
public struct SHA256Stream {
    private var state = crypto_hash_sha256_state()

    public init() {
        _ = sodium_init()
        crypto_hash_sha256_init(&state)
    }

    public mutating func update(_ bytes: [UInt8]) {
        crypto_hash_sha256_update(&state, bytes, UInt64(bytes.count))
    }

    public mutating func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: MerkleTree.hashLength)
        crypto_hash_sha256_final(&state, &digest)
        return digest
    }
}
