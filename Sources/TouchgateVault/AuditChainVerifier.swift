/// Checks a trail's public chain (``AuditSeal``) with nothing but the signer's public key:
/// records are fed in sequence order, then the seal that vouches for them.
///
/// Memory does not grow with the number of records. The first record's previous link is
/// taken as given: a trail pruned on its machine, or collected from some point on, starts
/// there; whoever already holds earlier records checks that it follows them.
public struct AuditChainVerifier: Sendable {
    /// The registered public key.
    public let publicKey: [UInt8]
    /// How many records were checked.
    public private(set) var count = 0
    /// The first record's sequence (nil before any).
    public private(set) var firstSequence: Int64?
    private var trail: [UInt8]?
    private var lastSequence: Int64?
    private var previous: [UInt8]?

    /// A verifier for trails signed by `publicKey`.
    public init(publicKey: [UInt8]) {
        self.publicKey = publicKey
    }

    /// A verifier that takes a trail up after record `sequence`, whose public link was
    /// `chain`: the records before it were archived (and are checked from the archive).
    public init(publicKey: [UInt8], after sequence: Int64, chain: [UInt8]) {
        self.publicKey = publicKey
        lastSequence = sequence
        previous = chain
    }

    /// Checks the next record of trail `trail`; returns what is wrong with it, or nil.
    public mutating func add(_ record: AuditRecord, trail: [UInt8]) -> (sequence: Int64, reason: String)? {
        let sequence = record.sequence
        if let known = self.trail, known != trail {
            return (sequence, "record \(sequence) belongs to another trail")
        }
        if let lastSequence, sequence != lastSequence + 1 {
            return sequence <= lastSequence
                ? (sequence, "record \(sequence) comes after record \(lastSequence): repeated or reordered")
                : (lastSequence + 1, sequence == lastSequence + 2
                    ? "record \(lastSequence + 1) is missing"
                    : "records \(lastSequence + 1)…\(sequence - 1) are missing")
        }
        guard let previousChain = record.previousChain, let chain = record.chain else {
            return (sequence, "record \(sequence) has no public link")
        }
        if let previous, !AuditMAC.equal(previous, previousChain) {
            return (sequence, "record \(sequence) does not follow record \(sequence - 1): inserted, replaced or reordered")
        }
        let computed = AuditSeal.link(trail: trail, previous: previousChain, record: record)
        guard AuditMAC.equal(computed, chain) else {
            return (sequence, "record \(sequence) was altered (its public link does not match its fields)")
        }
        self.trail = trail
        if firstSequence == nil { firstSequence = sequence }
        lastSequence = sequence
        previous = computed
        count += 1
        return nil
    }

    /// Checks the seal after the last record; returns what is wrong, or nil when every
    /// record fed is vouched for by a head `publicKey` signed.
    public func finish(seal: AuditSeal) -> (sequence: Int64, reason: String)? {
        guard seal.isSigned(by: publicKey) else {
            return (seal.sequence, "the signed head is not signed by the registered public key: it was forged, or the machine's signing key changed")
        }
        if let trail, trail != seal.trail {
            return (seal.sequence, "the signed head belongs to another trail")
        }
        guard let lastSequence, let previous else {
            return seal.sequence > 0 && seal.chain != AuditSeal.genesis
                ? (seal.sequence, "no record is present, but the signed head names record \(seal.sequence): the records were removed")
                : nil
        }
        if seal.sequence > lastSequence {
            return (lastSequence + 1, seal.sequence == lastSequence + 1
                    ? "record \(seal.sequence), the last one signed, is missing: the tail was removed"
                    : "records \(lastSequence + 1)…\(seal.sequence) are missing: the tail was removed")
        }
        if seal.sequence < lastSequence {
            return (seal.sequence + 1, "records \(seal.sequence + 1)…\(lastSequence) are not covered by the signed head: added afterwards")
        }
        guard AuditMAC.equal(previous, seal.chain) else {
            return (lastSequence, "record \(lastSequence) is not the one the signed head names: the trail was rewritten")
        }
        return nil
    }
}
