import FoundationEssentials

extension PrintStore {
    /// Seals, within the caller's write transaction, every stored template that is still
    /// in plaintext; returns how many it sealed. Used when the vault is created, to seal
    /// the prints the reader layer stored before a vault existed.
    ///
    /// The decision is made for each template from its own bytes, never from a marker
    /// that a hand edit could flip: a template that starts with
    /// ``VaultTemplateSealing/version`` and opens under `sealing` is sealed already and
    /// left alone; one that starts with that byte but does not open is damaged or sealed
    /// under another key, and is reported, not sealed a second time; anything else
    /// (libfprint's `FP…` serialization, an on-device handle) is plaintext and is sealed.
    /// - Throws: ``VaultError/integrity(what:)`` for a template that looks sealed but does
    ///   not open (nothing is written: the caller's transaction rolls back).
    @discardableResult
    static func sealPlaintextTemplates(_ db: Database, with sealing: VaultTemplateSealing) throws -> Int {
        let rows = try Row.fetchAll(db, sql: "SELECT id, user, finger, driver, deviceID, template FROM print")
        var sealedCount = 0
        for row in rows {
            let context = sealingContext(user: row["user"], finger: row["finger"],
                                         driver: row["driver"], deviceID: row["deviceID"])
            let stored: [UInt8]
            switch (row["template"] as DatabaseValue) {
            case let .blob(bytes): stored = Array(bytes)
            case let .string(text): stored = Array(text.utf8)
            default: throw VaultError.integrity(what: "a stored fingerprint template (\(context))")
            }
            if stored.first == VaultTemplateSealing.version {
                guard sealing.opens(stored, context: context) else {
                    throw VaultError.integrity(what: "a stored fingerprint template (\(context))")
                }
                continue
            }
            let sealed = try sealing.seal(stored, context: context)
            try db.execute(sql: "UPDATE print SET template = ? WHERE id = ?", arguments: [Data(sealed), row["id"] as Int64])
            sealedCount += 1
        }
        return sealedCount
    }

    /// The context string ``PrintStore`` binds a template to. It must stay identical to
    /// `PrintStore.context(user:finger:driver:deviceID:)` (private there); the sealing
    /// tests read migrated prints back through `PrintStore` and fail if they differ.
    static func sealingContext(user: String, finger: String, driver: String, deviceID: String) -> String {
        [user, finger, driver, deviceID].map { "\($0.utf8.count):\($0)" }.joined(separator: "|")
    }
}
