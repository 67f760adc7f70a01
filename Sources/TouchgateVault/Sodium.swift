import CSodium

/// libsodium's one-time initialisation, done before the first use of any sodium function.
///
/// `sodium_init()` must run before `sodium_malloc` (it sets the page size guarded
/// allocations use) and before the random generator is used. A `static let` is
/// initialised exactly once, thread-safely, on first access.
enum Sodium {
    /// Whether `sodium_init()` succeeded (0 first time, 1 if already done; -1 on failure).
    private static let initialized: Bool = sodium_init() >= 0

    /// Initialises libsodium if needed. Traps when libsodium cannot start: nothing
    /// secret can be handled safely then, and it does not depend on user input.
    static func ensureInitialized() {
        precondition(initialized, "libsodium failed to initialise (sodium_init() returned -1)")
    }

    /// Fills `buffer` with bytes from libsodium's CSPRNG.
    static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) {
        ensureInitialized()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }

    /// `count` random bytes (for non-secret values such as nonces, salts and ids).
    static func randomBytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randomBytes($0) }
        return bytes
    }
}
