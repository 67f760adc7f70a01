import CSodium
import GRDB

/// The digest of the authenticated state: every `vault_state` row and the vault's
/// `templates_sealed` marker, which the audit head carries under its MAC.
///
/// Encoding (then BLAKE2b-256, unkeyed: the head's keyed MAC is what authenticates it):
/// the domain `TGSTATE1`; for each row, in ascending order of its encoded key, a 1 byte,
/// then the key and the value as typed values; a 0 byte after the last row; then a 0 byte
/// when there is no vault, or a 1 byte and the marker as a typed value. A typed value is
/// a tag (0 NULL, 1 integer, 2 real, 3 text, 4 blob) and its content in the canonical
/// encoding of ``AuditMAC`` (integers and reals 8 bytes big-endian, text and blobs
/// length-prefixed). Types are included so that a value rewritten as another SQLite type
/// with the same bytes still changes the digest; the order is computed here, not by
/// SQLite's collation, so that the digest depends on the stored values alone.
/// `updated_at` is not covered: it is informational.
enum StateDigest {
    /// Length of the digest in bytes.
    static let length = 32

    /// The digest of the state as currently stored, read inside the caller's transaction.
    static func compute(_ db: Database) throws -> [UInt8] {
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT key, value FROM vault_state"))
        let marker = try Row.fetchOne(db.cachedStatement(sql: "SELECT templates_sealed FROM vault_meta WHERE id = 1"))
        return digest(rows: rows.map { ($0[0] as DatabaseValue, $0[1] as DatabaseValue) },
                      marker: marker.map { $0[0] as DatabaseValue })
    }

    /// The digest of explicit rows and marker (`nil`: no vault).
    static func digest(rows: [(key: DatabaseValue, value: DatabaseValue)], marker: DatabaseValue?) -> [UInt8] {
        let encoded = rows.map { row -> (key: [UInt8], value: [UInt8]) in
            var key = AuditMAC.Encoder(domain: "")
            typed(row.key, into: &key)
            var value = AuditMAC.Encoder(domain: "")
            typed(row.value, into: &value)
            return (key.output, value.output)
        }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        var encoder = AuditMAC.Encoder(domain: "TGSTATE1")
        for row in encoded {
            encoder.raw([1])
            encoder.raw(row.key)
            encoder.raw(row.value)
        }
        encoder.raw([0])
        if let marker {
            encoder.raw([1])
            typed(marker, into: &encoder)
        } else {
            encoder.raw([0])
        }
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: length)
        let input = encoder.output
        _ = crypto_generichash(&out, out.count, input, UInt64(input.count), nil, 0)
        return out
    }

    private static func typed(_ value: DatabaseValue, into encoder: inout AuditMAC.Encoder) {
        switch value.storage {
        case .null:
            encoder.raw([0])
        case let .int64(number):
            encoder.raw([1])
            encoder.integer(number)
        case let .double(number):
            encoder.raw([2])
            encoder.double(number)
        case let .string(text):
            encoder.raw([3])
            encoder.text(text)
        case let .blob(bytes):
            encoder.raw([4])
            encoder.bytes(bytes)
        }
    }
}
