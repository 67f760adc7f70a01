import FoundationEssentials

/// Seals templates before they reach the disk and opens them after.
///
/// ``PrintStore`` is the only type that reads or writes templates; it hands every
/// template through one of these. ``PlaintextTemplates`` stores them as they are,
/// which is what happens before a vault is created.
public protocol TemplateSealing: Sendable {
    /// Turns a template into the bytes stored in the database.
    /// `context` names the print (user, finger, reader) and should be bound to the result.
    func seal(_ template: [UInt8], context: String) throws -> [UInt8]
    /// Recovers a template from stored bytes; throws when they were altered.
    func open(_ stored: [UInt8], context: String) throws -> [UInt8]
}

/// Stores templates unsealed (no vault yet).
public struct PlaintextTemplates: TemplateSealing {
    /// The pass-through sealer.
    public init() {}
    public func seal(_ template: [UInt8], context: String) throws -> [UInt8] { template }
    public func open(_ stored: [UInt8], context: String) throws -> [UInt8] { stored }
}

/// The enrolled prints, keyed by user, finger, driver and device id.
///
/// Thread-safe (all state is in the database). The only reader and writer of
/// templates on disk: everything passes through the ``TemplateSealing`` it was given.
public struct PrintStore: Sendable {
    let database: TouchgateDatabase
    let sealing: any TemplateSealing

    /// A store over `database` that seals templates with `sealing`.
    public init(database: TouchgateDatabase, sealing: any TemplateSealing = PlaintextTemplates()) {
        self.database = database
        self.sealing = sealing
    }

    static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v1-prints") { db in
            try db.execute(sql: """
                CREATE TABLE print (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    user TEXT NOT NULL,
                    finger TEXT NOT NULL,
                    driver TEXT NOT NULL,
                    deviceID TEXT NOT NULL,
                    enrolledAt DOUBLE NOT NULL,
                    onDevice BOOLEAN NOT NULL,
                    template BLOB NOT NULL,
                    UNIQUE (user, finger, driver, deviceID)
                )
                """)
        }
    }

    private static func context(user: String, finger: String, driver: String, deviceID: String) -> String {
        // Length-prefixed so that no two different keys give the same string.
        [user, finger, driver, deviceID].map { "\($0.utf8.count):\($0)" }.joined(separator: "|")
    }

    /// Stores `print`. With `replace` an existing print for the same key is overwritten;
    /// without it, an existing one throws ``StoreError/alreadyEnrolled(user:finger:)``.
    ///
    /// One transaction, authenticated like every print write (the state digest covers the
    /// prints: ``StateDigest``); to store the print together with the enrollment counter and
    /// its audit record, use ``StoreTransaction/save(_:replace:in:)``.
    /// - Throws: ``IntegrityError/stateTampered(detail:)`` when the state was edited.
    public func save(_ print: StoredPrint, replace: Bool) throws {
        try AuditLog(database: database).atomically { try $0.save(print, replace: replace, in: self) }
    }

    /// The write itself, inside the caller's transaction.
    func save(_ db: Database, _ print: StoredPrint, replace: Bool) throws {
        let context = Self.context(user: print.user, finger: print.finger, driver: print.driver, deviceID: print.deviceID)
        let sealed = try sealing.seal(print.template, context: context)
        let exists = try Bool.fetchOne(db, sql: """
            SELECT 1 FROM print WHERE user = ? AND finger = ? AND driver = ? AND deviceID = ?
            """, arguments: [print.user, print.finger, print.driver, print.deviceID]) ?? false
        if exists && !replace {
            throw StoreError.alreadyEnrolled(user: print.user, finger: print.finger)
        }
        try db.execute(sql: """
            INSERT INTO print (user, finger, driver, deviceID, enrolledAt, onDevice, template)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user, finger, driver, deviceID) DO UPDATE SET
                enrolledAt = excluded.enrolledAt, onDevice = excluded.onDevice, template = excluded.template
            """, arguments: [print.user, print.finger, print.driver, print.deviceID,
                             print.enrolledAt.timeIntervalSince1970, print.onDevice, Data(sealed)])
    }

    /// Whether a print exists for this key.
    public func contains(user: String, finger: String, driver: String, deviceID: String) throws -> Bool {
        try database.writer.read { db in
            try Bool.fetchOne(db, sql: """
                SELECT 1 FROM print WHERE user = ? AND finger = ? AND driver = ? AND deviceID = ?
                """, arguments: [user, finger, driver, deviceID]) ?? false
        }
    }

    /// The stored prints, optionally narrowed to a user, finger and reader, in a stable order.
    public func prints(user: String? = nil, finger: String? = nil,
                       driver: String? = nil, deviceID: String? = nil) throws -> [StoredPrint] {
        let rows = try database.writer.read { db in
            try Self.rows(db, user: user, finger: finger, driver: driver, deviceID: deviceID)
        }
        return try rows.map(decode)
    }

    /// The same, inside the caller's transaction.
    func prints(_ db: Database, user: String?, finger: String?, driver: String?, deviceID: String?) throws -> [StoredPrint] {
        try Self.rows(db, user: user, finger: finger, driver: driver, deviceID: deviceID).map(decode)
    }

    private static func rows(_ db: Database, user: String?, finger: String?, driver: String?, deviceID: String?) throws -> [Row] {
        try Row.fetchAll(db, sql: """
            SELECT user, finger, driver, deviceID, enrolledAt, onDevice, template FROM print
            WHERE (?1 IS NULL OR user = ?1) AND (?2 IS NULL OR finger = ?2)
              AND (?3 IS NULL OR driver = ?3) AND (?4 IS NULL OR deviceID = ?4)
            ORDER BY user, finger, driver, deviceID
            """, arguments: [user, finger, driver, deviceID])
    }

    /// A print from its row, its template opened through ``sealing``.
    private func decode(_ row: Row) throws -> StoredPrint {
        let user: String = row["user"], finger: String = row["finger"]
        let driver: String = row["driver"], deviceID: String = row["deviceID"]
        let stored: Data = row["template"]
        let template = try sealing.open(Array(stored),
                                        context: Self.context(user: user, finger: finger, driver: driver, deviceID: deviceID))
        return StoredPrint(user: user, finger: finger, driver: driver, deviceID: deviceID,
                           enrolledAt: Date(timeIntervalSince1970: row["enrolledAt"]),
                           onDevice: row["onDevice"], template: template)
    }

    /// Deletes the print for this key; returns whether one was there.
    @discardableResult
    public func delete(user: String, finger: String, driver: String, deviceID: String) throws -> Bool {
        try AuditLog(database: database).atomically {
            try $0.deletePrint(user: user, finger: finger, driver: driver, deviceID: deviceID)
        }
    }

    /// The deletion itself, inside the caller's transaction.
    static func delete(_ db: Database, user: String, finger: String, driver: String, deviceID: String) throws -> Bool {
        try db.execute(sql: "PRAGMA secure_delete = ON")
        try db.execute(sql: """
            DELETE FROM print WHERE user = ? AND finger = ? AND driver = ? AND deviceID = ?
            """, arguments: [user, finger, driver, deviceID])
        return db.changesCount > 0
    }

    /// Deletes every print made on one reader; returns how many.
    @discardableResult
    public func deleteAll(driver: String, deviceID: String) throws -> Int {
        try AuditLog(database: database).atomically { try $0.deleteAllPrints(driver: driver, deviceID: deviceID) }
    }

    /// The deletion itself, inside the caller's transaction.
    static func deleteAll(_ db: Database, driver: String, deviceID: String) throws -> Int {
        try db.execute(sql: "PRAGMA secure_delete = ON")
        try db.execute(sql: "DELETE FROM print WHERE driver = ? AND deviceID = ?", arguments: [driver, deviceID])
        return db.changesCount
    }
}
