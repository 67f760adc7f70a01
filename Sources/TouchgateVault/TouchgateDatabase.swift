import FoundationEssentials
#if canImport(Glibc)
import Glibc
import TouchgateBasics
#endif

/// The one SQLite database (WAL mode) that holds Touchgate's state.
///
/// Opening creates the directory and file privately (0700 / 0600) and refuses existing
/// ones that other users can reach. Schema changes are migrations registered in
/// ``TouchgateDatabase/migrator``; each concern adds its own from a `+Schema` file.
public final class TouchgateDatabase: Sendable {
    /// The connection pool. Every read and write goes through it.
    package let writer: DatabasePool
    /// Where the database lives.
    public let location: StoreLocation
    /// What a long-lived process derives from this store and keeps until it changes.
    package let snapshots: StoreSnapshots
    /// Who the records written through this handle are for (``serving(_:)``); nil: this
    /// process's own user.
    public let client: AuditClient?

    /// Opens (creating if needed) the database at `location` and migrates it.
    /// - Throws: ``StoreError`` for unsafe permissions, I/O failures or a damaged file.
    public init(location: StoreLocation) throws {
        self.location = location
        snapshots = StoreSnapshots(location: location)
        client = nil
        try location.prepare()
        let path = location.databasePath
        try Self.createPrivately(path)
        // Every connection has trusted_schema = OFF: a store may come from elsewhere
        // (touchgated adopts one a user migrates), and its schema is not trusted to run
        // functions with side effects from triggers or views (``Database``).
        // The migrator reads which migrations ran, then runs the rest: two processes opening a new
        // store at once would both create its tables. And turning a new file to WAL takes an
        // exclusive lock that SQLite may refuse at once ("database is locked") instead of
        // waiting for it. So the whole open is one process at a time, behind a file lock.
        do {
            writer = try Self.whileHoldingMigrationLock(location) {
                // Durable commits (synchronous = FULL, set by the pool on its writer).
                let pool = try DatabasePool(path: path)
                try Self.migrator.migrate(pool)
                return pool
            }
        } catch let error as DatabaseError where error.resultCode == DatabaseError.busy || error.resultCode == DatabaseError.locked {
            // Busy is not damage: moving the file away, as the corrupt message advises, would lose the vault.
            throw StoreError.io(path: path, detail: "another touchgate process kept the database locked for over 10 seconds; try again")
        } catch let error as DatabaseError where DiskSpace.isExhausted(error, directory: location.directory.path) {
            // No room is not damage either.
            throw StoreError.noSpace(directory: location.directory.path)
        } catch let error as DatabaseError {
            throw StoreError.corrupt(path: path, detail: error.message ?? "SQLite error \(error.resultCode)")
        }
        // WAL side files take the main file's mode, but make sure of it.
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            chmod(path + suffix, 0o600)
        }
        try location.prepare()
    }

    /// This database, for one request made by `client`: every audit record written through
    /// the handle (and the vault, logs and state opened over it) names that caller. The
    /// service's gate gives the caller; it travels with the handle, never beside it.
    public func serving(_ client: AuditClient?) -> TouchgateDatabase {
        client == self.client ? self : TouchgateDatabase(sharing: self, client: client)
    }

    private init(sharing other: TouchgateDatabase, client: AuditClient?) {
        writer = other.writer
        location = other.location
        snapshots = other.snapshots
        self.client = client
    }

    /// Closes every connection now (before the directory is moved, say); the database
    /// cannot be used afterwards.
    public func closeConnections() throws {
        try writer.close()
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the writer connection and commits
    /// (durably: `synchronous = FULL`); rolls back and rethrows when `body` throws.
    ///
    /// Immediate, so the write lock is taken before anything is read: a read-modify-write
    /// in `body` cannot be interleaved with another process's. Never call the database
    /// from `body` other than through the `Database` it is given (the writer is held).
    func writeImmediately<T>(_ body: (Database) throws -> T) throws -> T {
        try writer.write(body)
    }

    /// Runs `body` holding an exclusive `flock` on `migrate.lock` in the data directory
    /// (created private), so that concurrent first opens create and migrate one after the other.
    private static func whileHoldingMigrationLock<T>(_ location: StoreLocation, _ body: () throws -> T) throws -> T {
        try PrivateFiles.whileLocking(location.directory.appendingPathComponent("migrate.lock").path, body)
    }

    /// Creates an empty file with mode 0600 before SQLite does, so it is never briefly public.
    private static func createPrivately(_ path: String) throws {
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw StoreError.io(path: path, detail: String(cString: strerror(errno)))
        }
        close(fd)
    }

    /// All schema migrations, in order. Registered names are permanent.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        PrintStore.registerMigrations(&migrator)
        VaultSchema.registerMigrations(&migrator)
        AuditLog.registerMigrations(&migrator)
        VaultSchema.registerItemKinds(&migrator)
        VaultSchema.registerItemDetails(&migrator)
        VaultSchema.registerTPMBinding(&migrator)
        return migrator
    }
}
