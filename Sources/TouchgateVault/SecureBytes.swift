import CSodium
import CTouchgateSys

/// Secret bytes (keys, passphrases, item values) kept in libsodium's guarded memory.
///
/// The bytes live in a `sodium_malloc` allocation: locked in RAM (`mlock`, so never
/// swapped where the kernel allows it), kept out of core dumps, with guard pages
/// around it. They are zeroed and freed when the last reference goes away. The
/// contents never appear in `description`, `debugDescription` or a `Mirror`.
///
/// Every allocation is also recorded, from before it is filled until just before it is
/// freed, in the process-wide registry that the fatal-signal handler installed by
/// ``ProcessHardening/harden()`` zeroes before the process exits. The registry holds
/// `CTOUCHGATESYS_SECRET_REGION_SLOTS` (1024) regions; past that a new allocation is
/// still guarded and zeroed on release as usual, only not wiped by the handler
/// (the kernel discards its pages when the process exits, and core dumps are off).
///
/// Immutable once made: read it with ``withUnsafeBytes(_:)``.
public final class SecureBytes: @unchecked Sendable {
    // @unchecked Sendable: the memory is written only inside the initialiser, before
    // `self` is published, and never again; afterwards every access is a read, and
    // `deinit` runs only once no other reference exists.
    private let pointer: UnsafeMutableRawPointer
    /// The allocation's slot in the fatal-signal registry, or -1 when the registry was full.
    let registrySlot: Int
    /// How many bytes are held.
    public let count: Int

    private init(allocation: (pointer: UnsafeMutableRawPointer, slot: Int), count: Int) {
        self.pointer = allocation.pointer
        self.registrySlot = allocation.slot
        self.count = count
    }

    /// Zeroed guarded memory for `count` bytes (at least one, so the pointer is never
    /// null), already registered for wiping on a fatal signal.
    static func allocate(count: Int) -> (pointer: UnsafeMutableRawPointer, slot: Int) {
        precondition(count >= 0, "negative size")
        Sodium.ensureInitialized()
        guard let pointer = sodium_malloc(max(count, 1)) else {
            fatalError("sodium_malloc(\(count)) failed: out of memory")
        }
        sodium_memzero(pointer, max(count, 1))
        return (pointer, CTouchgateSys_secret_register(pointer, max(count, 1)))
    }

    /// Unregisters, then zeroes, unlocks and unmaps an allocation.
    static func release(_ allocation: (pointer: UnsafeMutableRawPointer, slot: Int)) {
        if allocation.slot >= 0 {
            let result = CTouchgateSys_secret_unregister(allocation.slot, allocation.pointer)
            precondition(result == 0, "SecureBytes registry slot \(allocation.slot) does not hold this allocation")
        }
        sodium_free(allocation.pointer)  // zeroes before unmapping
    }

    /// Allocates `count` bytes in guarded memory and lets `initializer` fill them.
    ///
    /// If `initializer` throws, the memory is zeroed and freed and the error rethrown.
    public static func make(
        count: Int, _ initializer: (UnsafeMutableRawBufferPointer) throws -> Void
    ) rethrows -> SecureBytes {
        let allocation = allocate(count: count)
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: allocation.pointer, count: count))
        } catch {
            release(allocation)
            throw error
        }
        return SecureBytes(allocation: allocation, count: count)
    }

    /// A copy of `bytes` in guarded memory. The caller remains responsible for wiping the source.
    public init(copying bytes: some Collection<UInt8>) {
        let allocation = Self.allocate(count: bytes.count)
        pointer = allocation.pointer
        registrySlot = allocation.slot
        count = bytes.count
        UnsafeMutableRawBufferPointer(start: pointer, count: count).copyBytes(from: bytes)
    }

    /// `count` bytes from libsodium's CSPRNG.
    public static func random(count: Int) -> SecureBytes {
        make(count: count) { Sodium.randomBytes($0) }
    }

    /// Calls `body` with the bytes. The pointer is valid only during the call; do not
    /// copy the bytes anywhere that is not itself wiped.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Compares contents in time that depends only on the length (`sodium_memcmp`).
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        guard count == other.count else { return false }
        guard count > 0 else { return true }
        return sodium_memcmp(pointer, other.pointer, count) == 0
    }

    deinit {
        Self.release((pointer, registrySlot))
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Only the length: never the contents.
    public var description: String { "SecureBytes(\(count) bytes)" }
    /// Only the length: never the contents.
    public var debugDescription: String { description }
    /// A mirror without children, so `dump` and debuggers' summaries show no contents.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// A mutable working buffer in the same guarded, registered memory as ``SecureBytes``,
/// for bytes that pass through on their way to becoming secrets (a socket's receive
/// buffer). Zeroed and freed when released.
///
/// Not `Sendable`: one owner reads and writes it.
public final class GuardedBuffer {
    private let allocation: (pointer: UnsafeMutableRawPointer, slot: Int)
    /// Its size in bytes.
    public let capacity: Int

    /// `capacity` zeroed bytes.
    public init(capacity: Int) {
        allocation = SecureBytes.allocate(count: capacity)
        self.capacity = capacity
    }

    /// The bytes, for reading and writing; valid while the buffer lives.
    public var bytes: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: allocation.pointer, count: capacity)
    }

    deinit {
        SecureBytes.release(allocation)
    }
}
