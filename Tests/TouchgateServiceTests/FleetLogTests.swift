import Foundation
import Testing
import TouchgateBasics
import TouchgatePolicy
@testable import TouchgateShipping
import TouchgateVault

/// RFC 9162 trees computed the slow, obvious way: the reference the stored-node code is
/// checked against.
private func naiveRoot(_ leaves: ArraySlice<[UInt8]>) -> [UInt8] {
    if leaves.isEmpty { return MerkleTree.emptyRoot }
    if leaves.count == 1 { return MerkleTree.leafHash(leaves.first!) }
    var k = 1
    while k * 2 < leaves.count { k *= 2 }
    let start = leaves.startIndex
    return MerkleTree.nodeHash(naiveRoot(leaves[start..<start + k]), naiveRoot(leaves[(start + k)...]))
}

/// Every perfect subtree of a tree of `leaves`, as a store would hold them.
private func store(_ leaves: [[UInt8]]) -> [MerkleTree.Node: [UInt8]] {
    var tree = MerkleTree.Builder()
    var nodes: [MerkleTree.Node: [UInt8]] = [:]
    for leaf in leaves {
        for (node, hash) in tree.append(MerkleTree.leafHash(leaf)) { nodes[node] = hash }
    }
    return nodes
}

private func lookup(_ nodes: [MerkleTree.Node: [UInt8]]) -> (MerkleTree.Node) throws(MerkleTree.MissingNode) -> [UInt8] {
    { node throws(MerkleTree.MissingNode) in
        guard let hash = nodes[node] else { throw MerkleTree.MissingNode(node: node) }
        return hash
    }
}

private let leaves: [[UInt8]] = (0..<70).map { Array("entry \($0)".utf8) }

@Suite("Fleet log: RFC 9162 trees, proofs and signed notes")
struct FleetLogTests {
    @Test("the root grown leaf by leaf equals the naive tree's for every size up to 70, and RFC 6962's 8-leaf vector")
    func rootsMatchTheNaiveTree() {
        var tree = MerkleTree.Builder()
        #expect(tree.root == naiveRoot([]))
        for size in 1...leaves.count {
            tree.append(MerkleTree.leafHash(leaves[size - 1]))
            #expect(tree.root == naiveRoot(leaves[0..<size]), "size \(size)")
            let resumed = MerkleTree.Builder(size: Int64(size),
                                             frontier: MerkleTree.frontier(size: Int64(size)).map { store(Array(leaves[0..<size]))[$0]! })
            #expect(resumed.root == tree.root, "resumed at \(size)")
        }
        // Certificate Transparency's test vector (RFC 6962 hashing, which RFC 9162 keeps).
        let vector: [[UInt8]] = [[], [0x00], [0x10], [0x20, 0x21], [0x30, 0x31], [0x40, 0x41, 0x42, 0x43],
                                 Array(0x50...0x57), Array(0x60...0x6f)]
        #expect(Hex.encode(naiveRoot(vector[...])) == "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")
        var vectorTree = MerkleTree.Builder()
        vector.forEach { vectorTree.append(MerkleTree.leafHash($0)) }
        #expect(Hex.encode(vectorTree.root) == "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")
    }

    @Test("every inclusion proof up to 40 leaves verifies; another leaf or index, or a flipped bit, does not")
    func inclusionProofs() throws {
        for size in 1...40 {
            let nodes = store(Array(leaves[0..<size]))
            let root = naiveRoot(leaves[0..<size])
            for index in 0..<size {
                let needed = MerkleTree.nodesForProofs(index: Int64(index), old: nil, size: Int64(size))
                let proof = try MerkleTree.inclusionProof(index: Int64(index), size: Int64(size), lookup(nodes.filter { needed.contains($0.key) }))
                #expect(proof.count <= 6)
                let leaf = MerkleTree.leafHash(leaves[index])
                #expect(MerkleTree.verifyInclusion(leaf: leaf, index: Int64(index), size: Int64(size), proof: proof, root: root))
                #expect(!MerkleTree.verifyInclusion(leaf: MerkleTree.leafHash(leaves[(index + 1) % 70]), index: Int64(index),
                                                    size: Int64(size), proof: proof, root: root))
                if size > 1 {
                    #expect(!MerkleTree.verifyInclusion(leaf: leaf, index: Int64((index + 1) % size), size: Int64(size),
                                                        proof: proof, root: root))
                    var flipped = proof
                    flipped[0][0] ^= 1
                    #expect(!MerkleTree.verifyInclusion(leaf: leaf, index: Int64(index), size: Int64(size), proof: flipped, root: root))
                }
            }
        }
    }

    @Test("every consistency proof between sizes up to 40 verifies; a rewritten old tree or a cut new one does not")
    func consistencyProofs() throws {
        var rewritten = leaves
        rewritten[3] = Array("forged".utf8)
        for size in 1...40 {
            let nodes = store(Array(leaves[0..<size]))
            let root = naiveRoot(leaves[0..<size])
            for old in 1...size {
                let needed = MerkleTree.nodesForProofs(index: nil, old: Int64(old), size: Int64(size))
                let proof = try MerkleTree.consistencyProof(old: Int64(old), size: Int64(size), lookup(nodes.filter { needed.contains($0.key) }))
                let oldRoot = naiveRoot(leaves[0..<old])
                #expect(MerkleTree.verifyConsistency(old: Int64(old), oldRoot: oldRoot, size: Int64(size), root: root, proof: proof),
                        "\(old) → \(size)")
                if old > 3 {
                    // The log rewrote entry 3 after a verifier saw the tree of `old` entries.
                    #expect(!MerkleTree.verifyConsistency(old: Int64(old), oldRoot: oldRoot, size: Int64(size),
                                                          root: naiveRoot(rewritten[0..<size]), proof: proof))
                }
                if old < size {
                    #expect(!MerkleTree.verifyConsistency(old: Int64(size), oldRoot: root, size: Int64(old), root: oldRoot,
                                                          proof: proof), "cut back \(size) → \(old)")
                    #expect(!MerkleTree.verifyConsistency(old: Int64(old), oldRoot: oldRoot, size: Int64(size),
                                                          root: naiveRoot(leaves[0..<size - 1] + [[9]]), proof: proof))
                }
            }
        }
    }

    @Test("a proof reads O(log n) stored nodes: at most 4 log2(n) + 4, however large the log")
    func proofsReadLogarithmicallyManyNodes() {
        for size: Int64 in [1_000, 1_000_000, 1_000_000_007, 1 << 40] {
            let needed = MerkleTree.nodesForProofs(index: size / 3, old: size / 2 + 1, size: size)
            let bound = 4 * (64 - size.leadingZeroBitCount) + 4
            #expect(needed.count <= bound, "size \(size): \(needed.count)")
        }
    }

    @Test("notes, checkpoints, cosignatures and registrations sign and verify, and reject what was changed")
    func signedNotes() throws {
        let (enrollment, privateText) = NoteSigner.generate(name: "enroll.example", type: SignedNote.ed25519)
        let reread = try #require(NoteSigner.parse(privateText.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }))
        #expect(reread.publicKey == enrollment.publicKey)
        let verifier = try #require(NoteVerifier(text: enrollment.verifierKey))
        #expect(verifier == NoteVerifier(name: "enroll.example", type: SignedNote.ed25519, publicKey: enrollment.publicKey))

        let key = [UInt8](repeating: 7, count: 32)
        let registration = FleetEntry.register(machine: "web 01", publicKey: key, time: 1_764_000_000, enrollment: enrollment)
        #expect(FleetEntry(text: registration.text) == registration)
        #expect(registration.isRegistration(by: verifier))
        let (other, _) = NoteSigner.generate(name: "enroll.example", type: SignedNote.ed25519)
        #expect(!registration.isRegistration(by: try #require(NoteVerifier(text: other.verifierKey))))
        let swapped = registration.text.replacingOccurrences(of: Hex.encode(key), with: Hex.encode([UInt8](repeating: 8, count: 32)))
        #expect(FleetEntry(text: swapped).map { $0.isRegistration(by: verifier) } == false)

        let shipment = FleetEntry.shipment(.init(machine: "db+1", trail: Array(repeating: 1, count: 16), first: 1, last: 1000,
                                                 chain: Array(repeating: 2, count: 32), publicKey: key))
        #expect(FleetEntry(text: shipment.text) == shipment)
        #expect(FleetEntry(text: shipment.text.replacingOccurrences(of: "records 1 1000", with: "records 01 1000")) == nil)

        let checkpoint = Checkpoint(origin: Checkpoint.originPrefix + "abc", size: 42, root: MerkleTree.emptyRoot)
        #expect(Checkpoint(body: checkpoint.body) == checkpoint)
        #expect(Checkpoint(body: "other.origin\n42\n" + Data(MerkleTree.emptyRoot).base64EncodedString() + "\n") == nil)

        let (witness, _) = NoteSigner.generate(name: "witness.example/w1", type: SignedNote.cosignature)
        let witnessKey = try #require(NoteVerifier(text: witness.verifierKey))
        let line = witness.cosign(checkpoint.body, time: 1_764_000_123)
        let signature = try #require(SignedNote.parse(checkpoint.body + "\n" + line)?.signatures.first)
        #expect(witnessKey.cosignatureTime(signature, body: checkpoint.body) == 1_764_000_123)
        let moved = Checkpoint(origin: checkpoint.origin, size: 43, root: checkpoint.root)
        #expect(witnessKey.cosignatureTime(signature, body: moved.body) == nil)
        // A witness key cannot pass for an enrollment key, nor the other way round.
        #expect(NoteVerifier(text: witness.verifierKey)?.verifiedBody(witness.signNote("x\n")) == nil)
    }
}
