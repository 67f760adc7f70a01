public import TouchgateBasics

/// Process-wide protections for a program that opens stores: ``ProcessProtection/apply()``
/// with libsodium initialised first.
public enum ProcessHardening {
    /// Initialises libsodium, then applies ``ProcessProtection/apply()``. Safe to call again.
    /// - Throws: ``ServiceError`` when the kernel refuses.
    public static func harden() throws(ServiceError) {
        Sodium.ensureInitialized()
        try ProcessProtection.apply()
    }
}
