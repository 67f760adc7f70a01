import CSodium

/// The digest of the authenticated state, which the audit head carries under its MAC:
/// every `vault_state` row, the vault's `templates_sealed` marker, what unlocks the vault
/// (its passphrase wrapping), every item's version and every enrolled print.
///
/// Encoding (then BLAKE2b-256, unkeyed: the head's keyed MAC is what authenticates it):
/// the domain `TGSTATE3` (`TGSTATE2` for the second format); for each state row, in ascending order of its encoded key, a 1
/// byte, then the key and the value as typed values; a 0 byte after the last row; then a
/// 0 byte when there is no vault, or a 1 byte and the marker as a typed value. Then (the
/// part the first format, `TGSTATE1`, lacked) the `vault_meta` row's vault id, Argon2id
/// parameters, salt, wrapped vault key and TPM binding, as typed values after a 1 byte
/// (a 0 byte without a vault); and for each item, in ascending order of its encoded id,
/// a 1 byte, then its id, its nonce and whether its key was destroyed, as typed values;
/// a 0 byte after the last item. Then (the part the second format, `TGSTATE2`, lacked) for
/// each `print` row, in ascending order of its encoded id, a 1 byte, then every column
/// (id, user, finger, driver, device id, enrollment time, on-device flag, the stored
/// template) as typed values; a 0 byte after the last print. A typed value is a tag (0 NULL, 1 integer, 2 real, 3
/// text, 4 blob) and its content in the canonical encoding of ``AuditMAC`` (integers and
/// reals 8 bytes big-endian, text and blobs length-prefixed). Types are included so that
/// a value rewritten as another SQLite type with the same bytes still changes the digest;
/// the order is computed here, not by SQLite's collation, so that the digest depends on
/// the stored values alone.
///
/// Why items are covered: an item's seal binds its columns, so an edit fails to open, but
/// an older genuine row (an earlier value, a looser policy, a deleted item, a destroyed
/// key) opens fine. Its nonce, renewed at every write, is its version: an older row has
/// another one, so putting it back no longer matches the head. Likewise the passphrase
/// wrapping: an older `vault_meta` row would bring back a passphrase since changed.
/// `updated_at` and `created_at` are not covered: they are informational.
///
/// Why prints are covered (issue 46): who may pass the reader is the prints. A template's
/// seal binds it to its user, finger and reader, but an older genuine row (a finger since
/// re-enrolled or deleted, with the enrollment state an item was bound to) opens fine, and
/// so does a row copied from another store of the same vault. Every column is covered,
/// the sealed template whole (its nonce is new at every enrollment), so a row added,
/// removed, changed or put back no longer matches the head.
enum StateDigest {
    /// Length of the digest in bytes.
    static let length = 32

    /// The digest of the state as currently stored, read inside the caller's transaction.
    static func compute(_ db: Database) throws -> [UInt8] {
        var encoder = try stateMarkerAndItems(db, domain: "TGSTATE3")
        let prints = try Row.fetchAll(db, sql: """
            SELECT id, user, finger, driver, deviceID, enrolledAt, onDevice, template FROM print
            """)
        for print in sortedByFirstColumn(prints) {
            encoder.raw([1])
            encoder.raw(print.key)
            for index in 1..<print.row.count { typed(print.row[index] as DatabaseValue, into: &encoder) }
        }
        encoder.raw([0])
        return hash(encoder.output)
    }

    /// The second format's digest (`TGSTATE2`: no prints), which a head written by an
    /// earlier release carries; ``AuditLog`` upgrades such a head once.
    static func computeSecondFormat(_ db: Database) throws -> [UInt8] {
        hash(try stateMarkerAndItems(db, domain: "TGSTATE2").output)
    }

    /// The state rows, the marker, the passphrase wrapping and the items' versions: the
    /// part the second and third formats share.
    private static func stateMarkerAndItems(_ db: Database, domain: StaticString) throws -> AuditMAC.Encoder {
        var encoder = try stateAndMarker(db, domain: domain)
        if let meta = try Row.fetchOne(db, sql: """
            SELECT vault_id, kdf_algorithm, kdf_opslimit, kdf_memlimit, kdf_salt, wrapped_vault_key, tpm_binding
            FROM vault_meta WHERE id = 1
            """) {
            encoder.raw([1])
            for index in 0..<meta.count { typed(meta[index] as DatabaseValue, into: &encoder) }
        } else {
            encoder.raw([0])
        }
        let items = try Row.fetchAll(db, sql: "SELECT id, nonce, wrapped_key IS NULL FROM vault_item")
        for item in sortedByFirstColumn(items) {
            encoder.raw([1])
            encoder.raw(item.key)
            typed(item.row[1] as DatabaseValue, into: &encoder)
            typed(item.row[2] as DatabaseValue, into: &encoder)
        }
        encoder.raw([0])
        return encoder
    }

    /// The first format's digest (`TGSTATE1`: state rows and marker only), which a head
    /// written by an earlier release carries; ``AuditLog`` upgrades such a head once.
    static func computeFirstFormat(_ db: Database) throws -> [UInt8] {
        hash(try stateAndMarker(db, domain: "TGSTATE1").output)
    }

    /// The state rows and the marker, the part every format shares.
    private static func stateAndMarker(_ db: Database, domain: StaticString) throws -> AuditMAC.Encoder {
        let rows = try Row.fetchAll(db, sql: "SELECT key, value FROM vault_state")
        let marker = try Row.fetchOne(db, sql: "SELECT templates_sealed FROM vault_meta WHERE id = 1")
        var encoder = AuditMAC.Encoder(domain: domain)
        for row in sortedByFirstColumn(rows) {
            encoder.raw([1])
            encoder.raw(row.key)
            typed(row.row[1] as DatabaseValue, into: &encoder)
        }
        encoder.raw([0])
        if let marker {
            encoder.raw([1])
            typed(marker[0] as DatabaseValue, into: &encoder)
        } else {
            encoder.raw([0])
        }
        return encoder
    }

    /// `rows` in ascending order of their first column's typed encoding (returned with it).
    private static func sortedByFirstColumn(_ rows: [Row]) -> [(key: [UInt8], row: Row)] {
        rows.map { row -> (key: [UInt8], row: Row) in
            var key = AuditMAC.Encoder(domain: "")
            typed(row[0] as DatabaseValue, into: &key)
            return (key.output, row)
        }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
    }

    private static func hash(_ input: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: length)
        _ = crypto_generichash(&out, out.count, input, UInt64(input.count), nil, 0)
        return out
    }

    private static func typed(_ value: DatabaseValue, into encoder: inout AuditMAC.Encoder) {
        switch value {
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
