import CSodium
import CTouchgateSys

/// Process-wide protections to apply once, at the start of any program that handles secrets.
public enum ProcessHardening {
    /// Makes the process non-dumpable (no core files, no ptrace by other unprivileged
    /// processes of the same user) and initialises libsodium.
    ///
    /// Call it first thing in `main`, before a passphrase is read. Safe to call again.
    /// - Throws: ``VaultError/system(operation:code:)`` when the kernel refuses.
    public static func harden() throws {
        Sodium.ensureInitialized()
        let result = CTouchgateSys_harden_process()
        if result != 0 {
            throw VaultError.system(operation: "disable core dumps", code: -result)
        }
    }
}
