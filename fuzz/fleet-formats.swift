// Fuzz target: the fleet log's formats, which the collector reads from its database, from
// witnesses over HTTP and from files an auditor is handed. Built by `make fuzz` with
// TouchgateShipping's FleetLog sources (over TouchgatePolicy, TouchgateBasics, libsodium).
// From arbitrary bytes:
// - a signed note that parses prints back (body, blank line, its signature lines) to a note
//   that parses to the same body and signatures;
// - a checkpoint is read only from exactly the body it prints; a fleet entry likewise, and
//   it reads back equal;
// - a verifier key that parses prints to a key that parses back equal; a private key file
//   that parses signs a note its own verifier key accepts, and one byte changed in the
//   body makes it refuse;
// - over a tree of up to 64 leaves the input chooses, every genuine inclusion and
//   consistency proof verifies, and the same proof with one byte the input picks changed,
//   or claimed for another index, never does.

private struct Input {
    var bytes: [UInt8]
    var offset = 0
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzFleetFormats(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: input, as: UTF8.self)

    if let (body, signatures) = SignedNote.parse(text) {
        let printed = body + "\n" + signatures.map { SignedNote.line(name: $0.name, keyID: $0.keyID, payload: $0.payload) }
            .joined()
        guard let again = SignedNote.parse(printed), again.body == body, again.signatures == signatures else {
            fatalError("a note does not read back as printed")
        }
    }
    if let checkpoint = Checkpoint(body: text) {
        guard checkpoint.body == text, Checkpoint(body: checkpoint.body) == checkpoint else {
            fatalError("a checkpoint was read from text other than its own")
        }
    }
    if let entry = FleetEntry(text: text) {
        guard entry.text == text, FleetEntry(text: entry.text) == entry else {
            fatalError("a fleet entry was read from text other than its own")
        }
    }
    if let verifier = NoteVerifier(text: text) {
        guard NoteVerifier(text: verifier.text) == verifier else { fatalError("a verifier key does not read back") }
    }
    if let signer = NoteSigner.parse(text) {
        guard let verifier = NoteVerifier(text: signer.verifierKey), verifier.name == signer.name else {
            fatalError("a signer's verifier key does not parse")
        }
        let body = "touchgate.fleet/fuzz\n\(input.count)\n"
        let note = signer.signNote(body)
        if signer.type == SignedNote.ed25519 {
            guard verifier.verifiedBody(note) == body else { fatalError("a key refuses its own signature") }
            let changed = "touchgate.fleet/fuzZ" + note.dropFirst("touchgate.fleet/fuzz".count)
            guard verifier.verifiedBody(changed) == nil else { fatalError("a key accepts a changed body") }
        } else {
            guard verifier.verifiedBody(note) == nil else { fatalError("a cosignature key verified a plain note") }
        }
    }

    // A tree of leaves the input chooses (distinct: each holds its own index).
    var reader = Input(bytes: input)
    let count = Int64(reader.byte() % 64) + 1
    var leaves: [[UInt8]] = []
    var builder = MerkleTree.Builder()
    var roots: [[UInt8]] = [MerkleTree.emptyRoot]
    var nodes: [MerkleTree.Node: [UInt8]] = [:]
    for index in 0..<count {
        let leaf = MerkleTree.leafHash([UInt8(truncatingIfNeeded: index), reader.byte(), reader.byte()])
        leaves.append(leaf)
        for (node, hash) in builder.append(leaf) { nodes[node] = hash }
        roots.append(builder.root)
    }
    let lookup = { (node: MerkleTree.Node) throws(MerkleTree.MissingNode) -> [UInt8] in
        guard let hash = nodes[node] else { throw MerkleTree.MissingNode(node: node) }
        return hash
    }
    let size = Int64(reader.byte()) % count + 1
    let index = Int64(reader.byte()) % size
    let old = Int64(reader.byte()) % (size + 1)
    guard let inclusion = try? MerkleTree.inclusionProof(index: index, size: size, lookup),
          let consistency = try? MerkleTree.consistencyProof(old: old, size: size, lookup) else {
        fatalError("a proof needs a node the tree does not hold")
    }
    let root = roots[Int(size)]
    guard MerkleTree.verifyInclusion(leaf: leaves[Int(index)], index: index, size: size, proof: inclusion, root: root),
          MerkleTree.verifyConsistency(old: old, oldRoot: roots[Int(old)], size: size, root: root, proof: consistency)
    else { fatalError("a genuine proof does not verify") }
    let other = (index + 1 + Int64(reader.byte()) % size) % size
    if other != index,
       MerkleTree.verifyInclusion(leaf: leaves[Int(index)], index: other, size: size, proof: inclusion, root: root) {
        fatalError("an inclusion proof verified for another index")
    }
    let flip = UInt8(reader.byte() | 1)
    if !inclusion.isEmpty {
        var changed = inclusion
        let which = Int(reader.byte()) % changed.count
        changed[which][Int(reader.byte()) % MerkleTree.hashLength] ^= flip
        if MerkleTree.verifyInclusion(leaf: leaves[Int(index)], index: index, size: size, proof: changed, root: root) {
            fatalError("a changed inclusion proof verified")
        }
    }
    if !consistency.isEmpty {
        var changed = consistency
        let which = Int(reader.byte()) % changed.count
        changed[which][Int(reader.byte()) % MerkleTree.hashLength] ^= flip
        if MerkleTree.verifyConsistency(old: old, oldRoot: roots[Int(old)], size: size, root: root, proof: changed) {
            fatalError("a changed consistency proof verified")
        }
    }
    return 0
}
