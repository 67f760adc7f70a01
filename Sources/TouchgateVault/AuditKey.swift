import CSodium
import CTouchgateSys
import FoundationEssentials
import Synchronization
import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// The 32-byte key that MACs the audit chain, held in guarded memory.
///
/// It lives in `audit.key` beside the database, not in it, and does not depend on the
/// passphrase: records are appended while the vault is locked (failed attempts before
/// an unlock). So the chain detects editing by anyone who has the database but not the
/// key file (a copied SQLite file, a backup, a DBA); it does not stop malware running
/// as the same user, which can read the key. A daemon owning the store under another
/// uid is the stronger boundary.
final class AuditKey: @unchecked Sendable {
    // Safe to share: `bytes` is filled once in init, then made read-only with
    // sodium_mprotect_readonly, and freed only in deinit, when no other reference exists.
    private let bytes: UnsafeMutableRawPointer
    /// Its slot in the registry the fatal-signal handler wipes (which copes with
    /// read-only pages), or -1 when the registry was full.
    private let registrySlot: Int

    /// Key length in bytes (`crypto_generichash_KEYBYTES`).
    static let length = 32

    private init(fill: (UnsafeMutableRawPointer) throws -> Void) throws {
        guard sodium_init() >= 0, let memory = sodium_malloc(Self.length) else {
            fatalError("libsodium could not be initialised or could not allocate guarded memory")
        }
        let slot = CTouchgateSys_secret_register(memory, Self.length)
        do {
            try fill(memory)
        } catch {
            if slot >= 0 { CTouchgateSys_secret_unregister(slot, memory) }
            sodium_free(memory)
            throw error
        }
        sodium_mprotect_readonly(memory)
        bytes = memory
        registrySlot = slot
    }

    deinit {
        if registrySlot >= 0 { CTouchgateSys_secret_unregister(registrySlot, bytes) }
        sodium_free(bytes)
    }

    /// Keyed BLAKE2b-256 of `message`.
    func mac(_ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: AuditMAC.length)
        message.withUnsafeBufferPointer { input in
            _ = crypto_generichash(&out, out.count, input.baseAddress, UInt64(input.count),
                                   bytes.assumingMemoryBound(to: UInt8.self), Self.length)
        }
        return out
    }

    /// Calls `body` with the key's bytes (read-only; do not copy them out of guarded memory).
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: bytes, count: Self.length))
    }

    /// Keys read from their files, with the identity each file had then: touchgated serving
    /// the same store again reuses the key instead of reading the file into new guarded
    /// memory on every request. The file is still checked private and opened every time; one
    /// replaced, rewritten, chmod'ed or chown'ed has another identity and is read again.
    private static let loaded = Mutex<[String: (identity: FileIdentity, key: AuditKey)]>([:])
    /// At most this many keys are kept (each holds one locked page).
    static let loadedLimit = 64

    /// The key file for a data directory.
    static func path(in location: StoreLocation) -> String {
        location.directory.appendingPathComponent("audit.key").path
    }

    /// Whether anything (even a dangling link) is at `path`.
    static func exists(at path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Reads the key file after checking that it is a private regular file of this user.
    /// - Throws: ``StoreError/unsafePermissions(path:detail:)``, ``AuditError/keyMissing(path:)``,
    ///   ``AuditError/keyInvalid(path:detail:)`` or ``StoreError/io(path:detail:)``.
    static func load(path: String) throws -> AuditKey {
        guard exists(at: path) else { throw AuditError.keyMissing(path: path) }
        try StoreLocation.checkPrivate(path: path, isDirectory: false)
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError.io(path: path, detail: String(cString: strerror(errno))) }
        guard info.st_size == Self.length else {
            throw AuditError.keyInvalid(path: path, detail: "it holds \(info.st_size) bytes, not \(Self.length)")
        }
        let identity = FileIdentity(info)
        if let known = Self.loaded.withLock({ $0[path] }), known.identity == identity { return known.key }
        let key = try AuditKey { memory in
            var done = 0
            while done < Self.length {
                let count = read(fd, memory + done, Self.length - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    throw AuditError.keyInvalid(path: path, detail: "it could not be read in full")
                }
                done += count
            }
        }
        Self.loaded.withLock { loaded in
            if loaded.count >= Self.loadedLimit, loaded[path] == nil, let any = loaded.keys.first { loaded[any] = nil }
            loaded[path] = (identity, key)
        }
        return key
    }

    /// Creates a fresh random key file, or loads the one another process just created.
    ///
    /// The key is written to a temporary file created with `O_EXCL` and mode 0600, synced,
    /// then hard-linked to `path`. `link` fails if `path` exists, so of two processes
    /// racing, one wins and the other reads the winner's complete file; no reader ever
    /// sees a half-written key.
    static func create(path: String) throws -> AuditKey {
        let key = try AuditKey { memory in randombytes_buf(memory, Self.length) }
        let temporary = try key.writeTemporary(beside: path)
        defer { unlink(temporary) }
        if link(temporary, path) != 0 {
            let linkError = errno
            guard linkError == EEXIST else {
                throw StoreError.io(path: path, detail: String(cString: strerror(linkError)))
            }
            return try load(path: path)
        }
        // Make the new name durable before anything is MACed with the key.
        syncDirectory(of: path)
        return key
    }

    /// Creates a fresh random key and puts it at `path` in place of whatever key file is
    /// there (`rename`, so a reader sees the old file or the new one, never a mix).
    /// Only for ``AuditLog/restart(database:journal:now:vaultUser:reason:)``.
    static func replace(path: String) throws -> AuditKey {
        let key = try AuditKey { memory in randombytes_buf(memory, Self.length) }
        let temporary = try key.writeTemporary(beside: path)
        guard rename(temporary, path) == 0 else {
            let renameError = errno
            unlink(temporary)
            throw StoreError.io(path: path, detail: String(cString: strerror(renameError)))
        }
        syncDirectory(of: path)
        return key
    }

    /// Writes the key to a new private file next to `path` (mode 0600, synced); returns its path.
    private func writeTemporary(beside path: String) throws -> String {
        let temporary = path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        try PrivateFiles.create(temporary, bytes: UnsafeRawBufferPointer(start: bytes, count: Self.length), sync: true)
        return temporary
    }

    /// Makes a new directory entry durable.
    private static func syncDirectory(of path: String) {
        let directory = open(PathText.deletingLastComponent(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}
