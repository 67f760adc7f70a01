import CSodium

/// Secret bytes (keys, passphrases, item values) kept in libsodium's guarded memory.
///
/// The bytes live in a `sodium_malloc` allocation: locked in RAM (`mlock`, so never
/// swapped where the kernel allows it), kept out of core dumps, with guard pages
/// around it. They are zeroed and freed when the last reference goes away. The
/// contents never appear in `description`, `debugDescription` or a `Mirror`.
///
/// Immutable once made: read it with ``withUnsafeBytes(_:)``.
public final class SecureBytes: @unchecked Sendable {
    // @unchecked Sendable: the memory is written only inside the initialiser, before
    // `self` is published, and never again; afterwards every access is a read, and
    // `deinit` runs only once no other reference exists.
    private let pointer: UnsafeMutableRawPointer
    /// How many bytes are held.
    public let count: Int

    private init(pointer: UnsafeMutableRawPointer, count: Int) {
        self.pointer = pointer
        self.count = count
    }

    /// Zeroed guarded memory for `count` bytes (at least one, so the pointer is never null).
    private static func allocate(count: Int) -> UnsafeMutableRawPointer {
        precondition(count >= 0, "negative size")
        Sodium.ensureInitialized()
        guard let pointer = sodium_malloc(max(count, 1)) else {
            fatalError("sodium_malloc(\(count)) failed: out of memory")
        }
        sodium_memzero(pointer, max(count, 1))
        return pointer
    }

    /// Allocates `count` bytes in guarded memory and lets `initializer` fill them.
    ///
    /// If `initializer` throws, the memory is zeroed and freed and the error rethrown.
    public static func make(
        count: Int, _ initializer: (UnsafeMutableRawBufferPointer) throws -> Void
    ) rethrows -> SecureBytes {
        let pointer = allocate(count: count)
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: pointer, count: count))
        } catch {
            sodium_free(pointer)  // zeroes before unmapping
            throw error
        }
        return SecureBytes(pointer: pointer, count: count)
    }

    /// A copy of `bytes` in guarded memory. The caller remains responsible for wiping the source.
    public init(copying bytes: some Collection<UInt8>) {
        count = bytes.count
        pointer = Self.allocate(count: count)
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
        sodium_free(pointer)  // zeroes, unlocks and unmaps
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
