import CSodium

/// The canonical, unambiguous byte encoding of audit records and of the head row,
/// and the MACs over them.
///
/// Every field is written in a fixed order: integers as 8 bytes big-endian, doubles as
/// their IEEE-754 bit pattern (8 bytes big-endian), text and bytes as a 4-byte
/// big-endian length then the bytes, optional text as a 0 byte (absent) or a 1 byte
/// then the text. A distinct 8-byte domain tag starts each kind of message, so a
/// record MAC can never be passed off as a head MAC or the reverse.
enum AuditMAC {
    /// MAC length in bytes (BLAKE2b-256).
    static let length = 32
    /// The "previous MAC" of the first record ever written: 32 zero bytes.
    static let genesis = [UInt8](repeating: 0, count: length)

    /// The raw stored fields of one record, in storage types (so that a record read back
    /// from SQLite is encoded from exactly the stored values).
    struct Fields {
        var sequence: Int64
        var unixTime: Double
        var bootTime: Double
        var bootID: String
        var uid: Int64
        var loginName: String
        var vaultUser: String?
        var event: String
        var item: String?
        var outcome: String
        var reason: String
        var previousMAC: [UInt8]
    }

    /// The MAC of a record.
    static func record(_ fields: Fields, key: AuditKey) -> [UInt8] {
        var encoder = Encoder(domain: "TGAUDR01")
        encoder.fields(fields)
        return key.mac(encoder.output)
    }

    /// The MAC of the head row: the last record's sequence and MAC, the prune anchor and,
    /// from format 2 on, the digest of the authenticated state (``StateDigest``).
    ///
    /// A head without a digest is the first format (`TGAUDS01`), written before the state
    /// was authenticated; one with a digest is `TGAUDS02`. The domains differ, so a head
    /// of one format never verifies as the other: clearing the digest column of a
    /// format-2 head does not give an authentic format-1 head.
    static func state(headSequence: Int64, headMAC: [UInt8], anchorSequence: Int64, anchorMAC: [UInt8],
                      stateDigest: [UInt8]?, key: AuditKey) -> [UInt8] {
        var encoder = Encoder(domain: stateDigest == nil ? "TGAUDS01" : "TGAUDS02")
        encoder.integer(headSequence)
        encoder.bytes(headMAC)
        encoder.integer(anchorSequence)
        encoder.bytes(anchorMAC)
        if let stateDigest { encoder.bytes(stateDigest) }
        return key.mac(encoder.output)
    }

    /// Constant-time comparison (libsodium's `sodium_memcmp`) of two MACs.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in sodium_memcmp(x.baseAddress, y.baseAddress, x.count) == 0 }
        }
    }

    /// The canonical encoder; ``StateDigest`` uses it too.
    struct Encoder {
        private(set) var output: [UInt8]

        init(domain: StaticString) {
            output = []
            output.reserveCapacity(256)
            output.append(contentsOf: UnsafeBufferPointer(start: domain.utf8Start, count: domain.utf8CodeUnitCount))
        }

        /// Appends bytes as they are (no length): only for fixed-size tags and for output
        /// of another encoder, whose own encoding is already unambiguous.
        mutating func raw(_ value: [UInt8]) {
            output.append(contentsOf: value)
        }

        mutating func integer(_ value: Int64) {
            withUnsafeBytes(of: UInt64(bitPattern: value).bigEndian) { output.append(contentsOf: $0) }
        }

        mutating func double(_ value: Double) {
            withUnsafeBytes(of: value.bitPattern.bigEndian) { output.append(contentsOf: $0) }
        }

        mutating func bytes<C: Collection>(_ value: C) where C.Element == UInt8 {
            withUnsafeBytes(of: UInt32(value.count).bigEndian) { output.append(contentsOf: $0) }
            output.append(contentsOf: value)
        }

        mutating func text(_ value: String) {
            bytes(value.utf8)
        }

        /// Every stored field of a record, in their fixed order, ending with the previous MAC
        /// (what the record MAC covers; the public link adds its own parts around it).
        mutating func fields(_ fields: Fields) {
            integer(fields.sequence)
            double(fields.unixTime)
            double(fields.bootTime)
            text(fields.bootID)
            integer(fields.uid)
            text(fields.loginName)
            optionalText(fields.vaultUser)
            text(fields.event)
            optionalText(fields.item)
            text(fields.outcome)
            text(fields.reason)
            bytes(fields.previousMAC)
        }

        mutating func optionalText(_ value: String?) {
            if let value {
                output.append(1)
                text(value)
            } else {
                output.append(0)
            }
        }
    }
}
