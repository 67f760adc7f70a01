import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
import TouchgateBasics
#endif

/// A personal store's files, opened read-only for moving them into `touchgated`, with
/// every other writer held off until the move ends.
///
/// Taking it holds the database's write lock (`BEGIN IMMEDIATE` on a connection of its
/// own) and makes a consistent copy through SQLite (`VACUUM INTO`, so committed pages
/// still in the `-wal` file come along and no `-wal` is needed beside the copy). The copy
/// is made in the data directory itself (private to its owner), opened read-only and
/// unlinked at once: only the open descriptor keeps it, so a crash leaves no file
/// behind. Until ``release()`` or ``removeStore()``, other processes of the user wait
/// for the lock (and give up after the busy timeout) instead of writing a record the
/// moved copy would not have.
///
public final class StoreSnapshot: Sendable {
    /// The store the snapshot was taken of.
    public let location: StoreLocation
    /// The consistent copy of `touchgate.sqlite`, read-only (unlinked).
    public let database: Int32
    /// `audit.key`, read-only.
    public let auditKey: Int32

    /// The write lock, until ``release()``.
    private let holder: Mutex<WriteLockHolder?>

    private init(location: StoreLocation, database: Int32, auditKey: Int32, holder: WriteLockHolder) {
        self.location = location
        self.database = database
        self.auditKey = auditKey
        self.holder = Mutex(holder)
    }

    /// Takes the snapshot of the store at `location`, which must exist.
    /// - Throws: ``StoreError`` (unsafe permissions, I/O, busy), ``AuditError/keyMissing(path:)``.
    public static func take(of location: StoreLocation) throws -> StoreSnapshot {
        try location.prepare()
        let keyPath = AuditKey.path(in: location)
        guard AuditKey.exists(at: keyPath) else { throw AuditError.keyMissing(path: keyPath) }
        try StoreLocation.checkPrivate(path: keyPath, isDirectory: false)
        let holder: WriteLockHolder
        do {
            holder = try WriteLockHolder(path: location.databasePath)
        } catch let error as DatabaseError {
            throw StoreError.io(path: location.databasePath, detail: error.message ?? "SQLite error \(error.resultCode)")
        }
        // Copies an interrupted move left (it unlinks its own at once; only a kill between
        // the copy and the unlink leaves one). The write lock is held: no move runs now.
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: location.directory.path)) ?? []
        where entry.hasPrefix(".migrating-") && entry.hasSuffix(".sqlite") {
            unlink(location.directory.appendingPathComponent(entry).path)
        }
        let copyPath = location.directory
            .appendingPathComponent(".migrating-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite").path
        defer { unlink(copyPath) }
        do {
            // A second connection reads the last commit (the holder's open transaction has
            // written nothing) while the holder keeps every writer out.
            let reader = try DatabaseQueue(path: location.databasePath)
            try reader.inDatabase { db in try db.execute(sql: "VACUUM INTO ?", arguments: [copyPath]) }
            try reader.close()
        } catch let error as DatabaseError {
            holder.release()
            throw StoreError.io(path: location.databasePath, detail: error.message ?? "SQLite error \(error.resultCode)")
        }
        let database = open(copyPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard database >= 0 else {
            let number = errno
            holder.release()
            throw StoreError.io(path: copyPath, detail: String(cString: strerror(number)))
        }
        let auditKey = open(keyPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard auditKey >= 0 else {
            let number = errno
            close(database)
            holder.release()
            throw StoreError.io(path: keyPath, detail: String(cString: strerror(number)))
        }
        return StoreSnapshot(location: location, database: database, auditKey: auditKey, holder: holder)
    }

    /// Removes the store's files (`touchgate.sqlite` and its `-wal` / `-shm`, `audit.key`,
    /// `audit-sign.key`, `migrate.lock`), still holding the write lock, then the directory if it is empty;
    /// then releases. For after the moved copy verified.
    /// - Throws: ``StoreError/io(path:detail:)`` naming the first file that could not be removed.
    public func removeStore() throws {
        defer { release() }
        let database = location.databasePath
        for path in [database, database + "-wal", database + "-shm", AuditKey.path(in: location),
                     AuditSigner.path(in: location), location.directory.appendingPathComponent("migrate.lock").path] {
            if unlink(path) != 0 && errno != ENOENT {
                throw StoreError.io(path: path, detail: String(cString: strerror(errno)))
            }
        }
        let directory = open(location.directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        rmdir(location.directory.path)
    }

    /// Lets other writers in again and closes the descriptors. Idempotent.
    public func release() {
        let held = holder.withLock { holder in
            defer { holder = nil }
            return holder
        }
        guard let held else { return }
        held.release()
        close(database)
        close(auditKey)
    }

    deinit {
        release()
    }
}

/// An open `BEGIN IMMEDIATE` transaction that writes nothing, on a connection of its own,
/// until ``release()``: while it is open no other connection can write.
// @unchecked Sendable: `connection` is only touched under `lock` (and the connection may
// be used from any thread, one at a time: ``Database``).
private final class WriteLockHolder: @unchecked Sendable {
    private let lock = Mutex<Database?>(nil)

    /// Returns once the write lock is held; throws when it cannot be taken (busy past the
    /// timeout, an unreadable database).
    init(path: String) throws {
        let connection = try Database(path: path)
        try connection.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        lock.withLock { $0 = connection }
    }

    /// Rolls back (nothing was written) and closes the connection. Later calls do nothing.
    func release() {
        lock.withLock { connection in
            try? connection?.execute(sql: "ROLLBACK TRANSACTION")
            connection?.close()
            connection = nil
        }
    }
}

/// The daemon's side of a move: the files a client passed, copied into a directory of the
/// daemon's own beside the user's store, checked there, and only then moved into place.
///
/// The copy is made in `.migrating-NAME-RANDOM` beside the store directory `NAME` (mode
/// 0700, files 0600, synced) and moved into place with one `rename` of the directory, so
/// a crash leaves either no store or a complete one: a half-made copy never has the
/// store's name and is removed by the next move (``removeAbandoned()``).
public struct StoreAdoption: Sendable {
    /// Where the store goes.
    public let destination: StoreLocation

    /// The largest database accepted (a store holds secrets, prints and audit records;
    /// far below this).
    public static let maximumDatabaseBytes: Int64 = 1 << 30

    /// An adoption into `destination`.
    public init(destination: StoreLocation) {
        self.destination = destination
    }

    private var parent: URL { destination.directory.deletingLastPathComponent() }
    private var name: String { destination.directory.lastPathComponent }

    /// Takes an exclusive lock for moves into `destination` (one at a time); nil when
    /// another move holds it. The lock ends when the returned descriptor is closed.
    public func exclusive() throws -> Int32? {
        let path = parent.appendingPathComponent(".migrating-\(name).lock").path
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Removes copies an interrupted move left behind (call holding ``exclusive()``).
    public func removeAbandoned() {
        let prefixes = [".migrating-\(name)-", ".replaced-\(name)-"]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []
        for entry in entries where prefixes.contains(where: { entry.hasPrefix($0) }) {
            try? FileManager.default.removeItem(at: parent.appendingPathComponent(entry))
        }
    }

    /// Copies the passed files into a new private directory beside the destination and
    /// returns its location. Nothing is read from the descriptors but their contents
    /// (`pread`, so the sender's file offset is left alone).
    /// - Throws: ``StoreError/corrupt(path:detail:)`` for something that is not a store's
    ///   file, ``StoreError/io(path:detail:)``.
    public func stage(database: Int32, auditKey: Int32) throws -> StoreLocation {
        let staged = parent.appendingPathComponent(".migrating-\(name)-\(UInt64.random(in: 0...UInt64.max))")
        guard mkdir(staged.path, 0o700) == 0 else {
            throw StoreError.io(path: staged.path, detail: String(cString: strerror(errno)))
        }
        do {
            // Its trail is signed by the destination's key from the adoption on.
            let location = StoreLocation(directory: staged, signingKeyDirectory: destination.signingKeyDirectory)
            try Self.copy(database, to: location.databasePath, size: 1...Self.maximumDatabaseBytes, header: Self.sqliteHeader)
            try Self.copy(auditKey, to: AuditKey.path(in: location), size: Int64(AuditKey.length)...Int64(AuditKey.length),
                          header: [])
            Self.sync(staged.path)
            return location
        } catch {
            try? FileManager.default.removeItem(at: staged)
            throw error
        }
    }

    /// Moves a staged copy into place. What is at the destination (an empty store) is
    /// moved aside first and removed after.
    public func commit(_ staged: StoreLocation) throws {
        let destinationPath = destination.directory.path
        var aside: String?
        if FileManager.default.fileExists(atPath: destinationPath) {
            let path = parent.appendingPathComponent(".replaced-\(name)-\(UInt64.random(in: 0...UInt64.max))").path
            guard rename(destinationPath, path) == 0 else {
                throw StoreError.io(path: destinationPath, detail: String(cString: strerror(errno)))
            }
            aside = path
        }
        guard rename(staged.directory.path, destinationPath) == 0 else {
            throw StoreError.io(path: destinationPath, detail: String(cString: strerror(errno)))
        }
        Self.sync(parent.path)
        if let aside { try? FileManager.default.removeItem(atPath: aside) }
    }

    /// Removes a staged copy that will not be used.
    public func discard(_ staged: StoreLocation) {
        try? FileManager.default.removeItem(at: staged.directory)
    }

    /// What every SQLite 3 database file begins with.
    static let sqliteHeader = Array("SQLite format 3\0".utf8)

    private static func copy(_ source: Int32, to path: String, size: ClosedRange<Int64>, header: [UInt8]) throws {
        var info = stat()
        guard fstat(source, &info) == 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StoreError.corrupt(path: path, detail: "what was passed for it is not a regular file")
        }
        guard size.contains(Int64(info.st_size)) else {
            throw StoreError.corrupt(path: path, detail: "what was passed for it holds \(info.st_size) bytes")
        }
        let target = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard target >= 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
        defer { close(target) }
        let chunk = 1 << 16
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer {
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: chunk)
            buffer.deallocate()
        }
        var offset: Int64 = 0
        while true {
            let count = pread(source, buffer, chunk, off_t(offset))
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
            if count == 0 { break }
            if offset == 0 && !header.isEmpty {
                let start = UnsafeRawBufferPointer(start: buffer, count: min(count, header.count))
                guard Array(start) == header else {
                    throw StoreError.corrupt(path: path, detail: "what was passed for it is not an SQLite database")
                }
            }
            let failure = PrivateFiles.writeAll(target, UnsafeRawBufferPointer(start: buffer, count: count))
            guard failure == 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(failure))) }
            offset += Int64(count)
            guard offset <= size.upperBound else {
                throw StoreError.corrupt(path: path, detail: "what was passed for it grew while it was copied")
            }
        }
        guard size.contains(offset) else {
            throw StoreError.corrupt(path: path, detail: "what was passed for it holds \(offset) bytes")
        }
        guard fsync(target) == 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
    }

    private static func sync(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor >= 0 {
            fsync(descriptor)
            close(descriptor)
        }
    }
}
