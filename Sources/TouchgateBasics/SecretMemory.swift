#if canImport(Glibc)
import Glibc
#endif
// The fatal-signal registry. `make fuzz` compiles this file without the C module; there
// the memory is still locked, not dumped and wiped on release, only not registered.
#if canImport(CTouchgateSys)
import CTouchgateSys
#endif

// Secret memory for every Swift module (the vault's keys and values, the daemon's and the
// clients' receive buffers, the thin front, passphrases typed at a terminal). Hand-written
// over mmap rather than libsodium's sodium_malloc because this module is below every
// client and must not link a crypto library to hold bytes: the layout is the same (guard
// pages on both sides, the data locked in RAM, out of core dumps, zeroed when freed).

/// Pages mapped for secret bytes: a guard page, the data pages, a guard page.
struct SecretPages {
    /// The first data byte (the first byte after the leading guard page).
    let base: UnsafeMutableRawPointer
    /// How many data bytes were asked for (at least one, so `base` is never null).
    let count: Int
    /// The data pages' length (a whole number of pages).
    private let dataLength: Int
    /// The fatal-signal registry's slot for the data pages, or -1 when it was full.
    let slot: Int

    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Zeroed, locked, registered memory for `count` bytes. Stops the process when the
    /// memory cannot be mapped (out of memory or address space), like an allocation.
    init(count requested: Int) {
        precondition(requested >= 0, "negative size")
        let page = Self.pageSize
        count = max(requested, 1)
        dataLength = (count + page - 1) / page * page
        let total = dataLength + 2 * page
        guard let mapping = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapping != MAP_FAILED else {
            fatalError("cannot map \(total) bytes of secret memory: out of memory")
        }
        base = mapping + page
        // The guards fault on a read or write past either end.
        _ = mprotect(mapping, page, PROT_NONE)
        _ = mprotect(base + dataLength, page, PROT_NONE)
        // Locking can be refused (RLIMIT_MEMLOCK); the memory is still wiped and not dumped.
        _ = mlock(base, dataLength)
        _ = madvise(mapping, total, MADV_DONTDUMP)
        #if canImport(CTouchgateSys)
        slot = CTouchgateSys_secret_register(base, dataLength)
        #else
        slot = -1
        #endif
    }

    /// The data pages made read-only (for bytes that never change once written).
    func seal() {
        _ = mprotect(base, dataLength, PROT_READ)
    }

    /// Zeroes the data pages (they stay mapped).
    func wipe() {
        explicit_bzero(base, dataLength)
    }

    /// Unregisters, zeroes, unlocks and unmaps.
    func release() {
        #if canImport(CTouchgateSys)
        if slot >= 0 {
            let result = CTouchgateSys_secret_unregister(slot, base)
            precondition(result == 0, "secret memory registry slot \(slot) does not hold this allocation")
        }
        #endif
        _ = mprotect(base, dataLength, PROT_READ | PROT_WRITE)
        wipe()
        _ = munlock(base, dataLength)
        _ = munmap(base - Self.pageSize, dataLength + 2 * Self.pageSize)
    }
}

/// Secret bytes (keys, passphrases, item values): the one type every module holds secrets in.
///
/// The bytes live in pages of their own with a guard page on each side, locked in RAM
/// (`mlock`, so never swapped where the kernel allows it), left out of core dumps, and
/// read-only once filled. They are zeroed and unmapped when the last reference goes away.
/// The contents never appear in `description`, `debugDescription` or a `Mirror`.
///
/// Every allocation is also recorded, from before it is filled until just before it is
/// freed, in the process-wide registry that the fatal-signal handler (installed by the
/// vault's `ProcessHardening.harden()` and by the front) zeroes before the process exits. The
/// registry holds `CTOUCHGATESYS_SECRET_REGION_SLOTS` (1024) regions; past that a new
/// allocation is still guarded and zeroed on release as usual, only not wiped by the
/// handler (the kernel discards its pages when the process exits, and core dumps are off).
public final class SecretBytes: @unchecked Sendable {
    // @unchecked Sendable: the memory is written only inside the initialiser, before
    // `self` is published, and is read-only afterwards; `deinit` runs only once no other
    // reference exists.
    private let pages: SecretPages
    /// How many bytes are held.
    public let count: Int

    /// The allocation's slot in the fatal-signal registry, or -1 when the registry was full.
    package var registrySlot: Int { pages.slot }

    private init(pages: SecretPages, count: Int) {
        self.pages = pages
        self.count = count
        pages.seal()
    }

    /// Allocates `count` bytes of secret memory and lets `initializer` fill them.
    ///
    /// If `initializer` throws, the memory is zeroed and freed and the error rethrown.
    public static func make(
        count: Int, _ initializer: (UnsafeMutableRawBufferPointer) throws -> Void
    ) rethrows -> SecretBytes {
        let pages = SecretPages(count: count)
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: pages.base, count: count))
        } catch {
            pages.release()
            throw error
        }
        return SecretBytes(pages: pages, count: count)
    }

    /// A copy of `bytes` in secret memory. The caller remains responsible for wiping the source.
    public convenience init(copying bytes: some Collection<UInt8>) {
        let pages = SecretPages(count: bytes.count)
        UnsafeMutableRawBufferPointer(start: pages.base, count: bytes.count).copyBytes(from: bytes)
        self.init(pages: pages, count: bytes.count)
    }

    /// Calls `body` with the bytes. The pointer is valid only during the call; do not
    /// copy the bytes anywhere that is not itself wiped.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pages.base, count: count))
    }

    deinit {
        pages.release()
    }
}

extension SecretBytes {
    /// Compares contents in time that depends only on the length: every byte is read and
    /// the differences are accumulated, with no early exit (the comparison libsodium's
    /// `sodium_memcmp` makes, written here so that a client needs no crypto library).
    public func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in
                var difference: UInt8 = 0
                for index in 0..<mine.count { difference |= mine[index] ^ theirs[index] }
                return difference == 0
            }
        }
    }
}

extension SecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Only the length: never the contents.
    public var description: String { "SecretBytes(\(count) bytes)" }
    /// Only the length: never the contents.
    public var debugDescription: String { description }
    /// A mirror without children, so `dump` and debuggers' summaries show no contents.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// A mutable buffer in the same secret memory as ``SecretBytes``, for bytes on their way
/// to becoming secrets or carrying them (a socket's receive buffer, a line read from a
/// pinentry, a passphrase being typed, the JSON that carries a released value). Zeroed
/// by ``wipe()`` and when released.
///
/// Not `Sendable`: one owner reads and writes it.
public final class SecretBuffer {
    private let pages: SecretPages
    /// How many bytes it can hold.
    public let capacity: Int
    /// How many are in use, from the start.
    public var count = 0

    /// `capacity` zeroed bytes, none in use.
    public init(capacity: Int) {
        pages = SecretPages(count: capacity)
        self.capacity = capacity
    }

    /// Where the bytes are.
    public var base: UnsafeMutableRawPointer { pages.base }

    /// The whole buffer, for reading and writing; valid while the buffer lives.
    public var storage: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: pages.base, count: capacity)
    }

    /// The bytes in use.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pages.base, count: count) }

    /// Appends `byte`; false when full.
    @discardableResult
    public func append(_ byte: UInt8) -> Bool {
        guard count < capacity else { return false }
        pages.base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
        return true
    }

    /// Appends `bytes`; false when they do not all fit.
    @discardableResult
    public func append(contentsOf bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { append($0) }
    }

    /// Zeroes every byte and empties it.
    public func wipe() {
        pages.wipe()
        count = 0
    }

    deinit {
        pages.release()
    }
}
