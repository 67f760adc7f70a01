import CSodium
import FoundationEssentials

/// The public chain over the audit records and its signed head, the seal: what lets
/// someone holding no secret at all verify a trail.
///
/// The MAC chain (``AuditMAC``) needs `audit.key` to check, and whoever holds that key can
/// also forge records, so it cannot be handed to a central verifier. Beside it, each
/// record carries a public link: unkeyed BLAKE2b-256 over the trail's id, the previous
/// record's link and every stored field of the record, its MAC included. The seal is the
/// last record's sequence and link, signed with the machine's Ed25519 key
/// (``AuditSigner``), and moves forward in the same transaction as every append.
///
/// A verifier with the public key recomputes every link from the fields it was given, so
/// an edited, inserted, removed or reordered record breaks the path to the signed link;
/// a removed tail shows as a seal naming a later record than the last one present. An
/// append extends the chain from the seal's own link, never from a stored link column,
/// and only after checking the seal's signature: an edit made to the database with
/// sqlite3, chain columns recomputed and all, is never signed over.
public struct AuditSeal: Sendable, Equatable {
    /// The trail's random 16-byte id: a new one for every trail started afresh.
    public let trail: [UInt8]
    /// The sequence of the last record it vouches for (0: none yet).
    public let sequence: Int64
    /// That record's public link (``AuditSeal/genesis`` before the first).
    public let chain: [UInt8]
    /// The public half of the key that signed it.
    public let publicKey: [UInt8]
    /// Ed25519 over ``message(trail:sequence:chain:)``.
    public let signature: [UInt8]

    /// The link before a trail's first record: 32 zero bytes.
    public static let genesis = [UInt8](repeating: 0, count: 32)
    /// Length of a trail id.
    static let trailLength = 16

    /// The bytes the signature covers.
    static func message(trail: [UInt8], sequence: Int64, chain: [UInt8]) -> [UInt8] {
        var encoder = AuditMAC.Encoder(domain: "TGAUDH01")
        encoder.bytes(trail)
        encoder.integer(sequence)
        encoder.bytes(chain)
        return encoder.output
    }

    /// Whether `publicKey` signed it (and it is its own stated key).
    public func isSigned(by publicKey: [UInt8]) -> Bool {
        AuditMAC.equal(publicKey, self.publicKey)
            && AuditSigner.isValid(signature: signature, of: Self.message(trail: trail, sequence: sequence, chain: chain),
                                   publicKey: publicKey)
    }

    /// A seal over `sequence` and `chain`, signed now.
    init(trail: [UInt8], sequence: Int64, chain: [UInt8], signer: AuditSigner) {
        self.trail = trail
        self.sequence = sequence
        self.chain = chain
        publicKey = signer.publicKey
        signature = signer.sign(Self.message(trail: trail, sequence: sequence, chain: chain))
    }

    /// A seal as received (an export, a collector's database).
    public init(trail: [UInt8], sequence: Int64, chain: [UInt8], publicKey: [UInt8], signature: [UInt8]) {
        self.trail = trail
        self.sequence = sequence
        self.chain = chain
        self.publicKey = publicKey
        self.signature = signature
    }

    /// A fresh random trail id.
    static func newTrail() -> [UInt8] {
        var trail = [UInt8](repeating: 0, count: trailLength)
        randombytes_buf(&trail, trailLength)
        return trail
    }

    /// The public link of a record with these stored fields and MAC, following `previous`.
    public static func link(trail: [UInt8], previous: [UInt8], record: AuditRecord) -> [UInt8] {
        link(trail: trail, previous: previous, fields: AuditMAC.Fields(record), mac: record.mac)
    }

    static func link(trail: [UInt8], previous: [UInt8], fields: AuditMAC.Fields, mac: [UInt8]) -> [UInt8] {
        var encoder = AuditMAC.Encoder(domain: "TGAUDP01")
        encoder.bytes(trail)
        encoder.bytes(previous)
        encoder.fields(fields)
        encoder.bytes(mac)
        var out = [UInt8](repeating: 0, count: 32)
        encoder.output.withUnsafeBufferPointer { input in
            _ = crypto_generichash(&out, out.count, input.baseAddress, UInt64(input.count), nil, 0)
        }
        return out
    }

    // MARK: Storage

    /// The stored row: `nil` if absent, `.some(nil)` if present but malformed.
    static func fetch(_ db: Database) throws -> AuditSeal?? {
        guard let row = try Row.fetchOne(db, sql: "SELECT trail, seq, chain, publicKey, signature FROM auditSeal WHERE id = 1") else {
            return nil
        }
        guard case let .blob(trail) = (row[0] as DatabaseValue),
              case let .int64(sequence) = (row[1] as DatabaseValue),
              case let .blob(chain) = (row[2] as DatabaseValue),
              case let .blob(publicKey) = (row[3] as DatabaseValue),
              case let .blob(signature) = (row[4] as DatabaseValue)
        else { return .some(nil) }
        return AuditSeal(trail: Array(trail), sequence: sequence, chain: Array(chain), publicKey: Array(publicKey),
                         signature: Array(signature))
    }

    /// Inserts or replaces the row.
    func save(_ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO auditSeal (id, trail, seq, chain, publicKey, signature) VALUES (1, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET trail = excluded.trail, seq = excluded.seq, chain = excluded.chain,
                publicKey = excluded.publicKey, signature = excluded.signature
            """, arguments: [Data(trail), sequence, Data(chain), Data(publicKey), Data(signature)])
    }
}

extension AuditMAC.Fields {
    /// The stored fields of a record as returned.
    init(_ record: AuditRecord) {
        self.init(sequence: record.sequence, unixTime: record.unixTime, bootTime: record.bootTime,
                  bootID: record.bootID, uid: Int64(record.uid), loginName: record.loginName,
                  vaultUser: record.vaultUser, event: record.event.rawValue, item: record.item,
                  outcome: record.outcome.rawValue, reason: record.reason, previousMAC: record.previousMAC)
    }
}
