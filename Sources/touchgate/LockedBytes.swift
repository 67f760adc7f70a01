#if canImport(Glibc)
import Glibc
#endif
import CTouchgateSys

/// Memory for bytes that may hold a secret (everything read from the daemon's socket, a
/// passphrase, a released value and the JSON that carries it): its own pages, locked
/// against swapping and left out of core dumps, registered with the fatal-signal handler
/// that wipes it on a crash, and wiped by ``wipe()`` and when freed.
final class LockedBytes {
    /// Where the bytes are.
    let base: UnsafeMutableRawPointer
    /// How many bytes it can hold.
    let capacity: Int
    /// How many are in use (from ``base``).
    var count = 0
    private let slot: Int

    /// Memory for `capacity` bytes, or nil when it cannot be mapped.
    init?(capacity: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let length = max(page, (capacity + page - 1) / page * page)
        guard let pointer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              pointer != UnsafeMutableRawPointer(bitPattern: -1) else { return nil }
        // Locking can be refused (RLIMIT_MEMLOCK); the memory is still wiped and not dumped.
        _ = mlock(pointer, length)
        _ = madvise(pointer, length, MADV_DONTDUMP)
        base = pointer
        self.capacity = length
        slot = CTouchgateSys_secret_register(pointer, length)
    }

    deinit {
        wipe()
        if slot >= 0 { _ = CTouchgateSys_secret_unregister(slot, base) }
        munlock(base, capacity)
        munmap(base, capacity)
    }

    /// The bytes in use.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Appends `byte`; false when full.
    @discardableResult
    func append(_ byte: UInt8) -> Bool {
        guard count < capacity else { return false }
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
        return true
    }

    /// Appends `bytes`; false when they do not all fit.
    @discardableResult
    func append(contentsOf bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { append($0) }
    }

    /// Zeroes every byte and empties it.
    func wipe() {
        explicit_bzero(base, capacity)
        count = 0
    }
}
