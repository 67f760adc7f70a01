import FoundationEssentials
import Glibc
import TouchgateAPI
import TouchgateBasics
import TouchgateShipping
import TouchgateVault

/// The fleet log written out as C2SP tlog-tiles (c2sp.org/tlog-tiles): static files any
/// web server or object store serves, which any tlog client reads without Touchgate's code.
///
/// - `checkpoint`: the signed checkpoint note (the log's key, and witnesses' cosignatures).
/// - `tile/<L>/<N>`: a tile of level L holds 256 hashes: the nodes of tree level 8·L,
///   indices 256·N to 256·N + 255. The right edge of a level is a partial tile,
///   `tile/<L>/<N>.p/<W>` with its W hashes.
/// - `tile/entries/<N>`: the entries 256·N … (a bundle: each a big-endian 16-bit length
///   and its bytes), partial ones as above.
/// - `<N>` is written in groups of three digits, each but the last prefixed by `x`
///   (1234067 → `x001/x234/067`).
///
/// A full tile never changes, so one already written is left as it is: a publish writes
/// the tiles its new entries filled and the partial ones at the right edge.
struct FleetTiles {
    let store: FleetLogStore
    let directory: String

    static let width: Int64 = 256
    static let height = 8

    init(store: FleetLogStore, directory: String) throws(ServiceError) {
        self.store = store
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ServiceError(.usage, "cannot make the tiles directory \(directory): \(error)")
        }
    }

    /// `index` as a tile path: groups of three digits, all but the last prefixed with `x`.
    static func path(_ index: Int64) -> String {
        var groups: [String] = []
        var rest = index
        repeat {
            groups.insert((rest % 1000).zeroPadded(3), at: 0)
            rest /= 1000
        } while rest > 0
        return groups.dropLast().map { "x" + $0 }.joined(separator: "/") + (groups.count > 1 ? "/" : "") + groups.last!
    }

    /// The path of tile `index` of level `level` (nil: an entry bundle), `width` entries wide.
    static func tilePath(level: Int?, index: Int64, width: Int64) -> String {
        "tile/" + (level.map(String.init) ?? "entries") + "/" + path(index) + (width < Self.width ? ".p/\(width)" : "")
    }

    /// Writes every tile a log of `size` entries has that is not written yet, then
    /// `checkpoint`; returns how many files were written.
    func write(size: Int64, checkpoint: String) throws(ServiceError) -> Int {
        var files = 0
        var level = 0
        // Nodes at tree level 8·L that are complete: size >> 8·L of them.
        while level * Self.height < 48, size >> (level * Self.height) > 0 {
            let count = size >> (level * Self.height)
            for index in 0...((count - 1) / Self.width) {
                let width = min(Self.width, count - index * Self.width)
                let path = Self.tilePath(level: level, index: index, width: width)
                if width == Self.width, FileManager.default.fileExists(atPath: directory + "/" + path) { continue }
                try put(path, try hashes(level: level * Self.height, from: index * Self.width, count: width))
                files += 1
            }
            level += 1
        }
        if size > 0 {
            for index in 0...((size - 1) / Self.width) {
                let width = min(Self.width, size - index * Self.width)
                let path = Self.tilePath(level: nil, index: index, width: width)
                if width == Self.width, FileManager.default.fileExists(atPath: directory + "/" + path) { continue }
                try put(path, try bundle(from: index * Self.width, count: width))
                files += 1
            }
        }
        try put("checkpoint", Array(checkpoint.utf8))
        return files + 1
    }

    /// The stored hashes of nodes `from..<from + count` of tree level `level`, in order.
    private func hashes(level: Int, from: Int64, count: Int64) throws(ServiceError) -> [UInt8] {
        let nodes = (from..<(from + count)).map { MerkleTree.Node(level: level, index: $0) }
        let found = try store.hashes(nodes)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(nodes.count * MerkleTree.hashLength)
        for node in nodes {
            guard let hash = found[node] else { throw FleetLogStore.missing(MerkleTree.MissingNode(node: node)) }
            bytes += hash
        }
        return bytes
    }

    /// Entries `from..<from + count` as a bundle, each checked against its leaf.
    private func bundle(from: Int64, count: Int64) throws(ServiceError) -> [UInt8] {
        let rows = try store.connection.execute("""
            SELECT leaf, body FROM log_entries WHERE leaf >= $1 AND leaf < $2 ORDER BY leaf
            """, [String(from), String(from + count)]).rows
        let leaves = try store.hashes((from..<(from + count)).map { MerkleTree.Node(level: 0, index: $0) })
        var bytes: [UInt8] = []
        for (offset, row) in rows.enumerated() {
            let index = from + Int64(offset)
            guard row[0] == String(index), let body = row[1] else {
                throw FleetLogStore.edited("entry \(index) is missing")
            }
            let data = Array(body.utf8)
            guard leaves[MerkleTree.Node(level: 0, index: index)] == MerkleTree.leafHash(data) else {
                throw FleetLogStore.edited("entry \(index) is not the leaf its tree holds: the entry was changed")
            }
            guard data.count <= Int(UInt16.max) else {
                throw FleetLogStore.edited("entry \(index) is longer than a tile bundle holds (65,535 bytes)")
            }
            bytes += [UInt8(data.count >> 8), UInt8(data.count & 0xff)] + data
        }
        guard rows.count == Int(count) else { throw FleetLogStore.edited("entry \(from + Int64(rows.count)) is missing") }
        return bytes
    }

    /// Writes `bytes` to `path` under the directory, through a temporary file renamed over it.
    private func put(_ path: String, _ bytes: [UInt8]) throws(ServiceError) {
        let target = directory + "/" + path
        let folder = String(target[..<target.lastIndex(of: "/")!])
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let temporary = target + ".tmp-\(getpid())"
            try Data(bytes).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, target) == 0 else {
                throw ServiceError(.usage, "cannot write \(target): \(String(cString: strerror(errno)))")
            }
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.usage, "cannot write \(target): \(error)")
        }
    }
}
