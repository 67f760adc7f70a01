import Foundation
import GRDB

extension PrintStore {
    /// Re-seals every stored template from `old` to `new` within the caller's write
    /// transaction; returns how many. Used once, when the vault is created, to seal the
    /// prints the reader layer stored in plaintext before a vault existed.
    @discardableResult
    static func resealTemplates(_ db: Database, from old: any TemplateSealing, to new: any TemplateSealing) throws -> Int {
        let rows = try Row.fetchAll(db, sql: "SELECT id, user, finger, driver, deviceID, template FROM print")
        for row in rows {
            let context = sealingContext(user: row["user"], finger: row["finger"],
                                         driver: row["driver"], deviceID: row["deviceID"])
            let stored: Data = row["template"]
            let template = try old.open(Array(stored), context: context)
            let sealed = try new.seal(template, context: context)
            try db.execute(sql: "UPDATE print SET template = ? WHERE id = ?", arguments: [Data(sealed), row["id"] as Int64])
        }
        return rows.count
    }

    /// The context string ``PrintStore`` binds a template to. It must stay identical to
    /// `PrintStore.context(user:finger:driver:deviceID:)` (private there); the resealing
    /// test reads migrated prints back through `PrintStore` and fails if they differ.
    static func sealingContext(user: String, finger: String, driver: String, deviceID: String) -> String {
        [user, finger, driver, deviceID].map { "\($0.utf8.count):\($0)" }.joined(separator: "|")
    }
}
