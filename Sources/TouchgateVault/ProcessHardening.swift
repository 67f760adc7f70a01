import CSodium
import CTouchgateSys
import TouchgateBasics

/// Process-wide protections to apply once, at the start of any program that handles secrets.
public enum ProcessHardening {
    /// Makes the process non-dumpable (no core files, no ptrace by other unprivileged
    /// processes of the same user), initialises libsodium, and makes every fatal signal
    /// end the process at once with its secrets wiped.
    ///
    /// The fatal-signal handler replaces the Swift runtime's crash backtracer (which
    /// prints registers and memory, and could let a process sent `kill -SEGV` carry on).
    /// On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGQUIT, SIGXCPU or
    /// SIGXFSZ, whether a real fault or sent by `kill`, it zeroes every live
    /// ``SecretBytes`` allocation, writes the one line
    /// `touchgate: stopped by fatal signal N (NAME); memory wiped, nothing further released`
    /// to standard error and exits with status 128 + N. A crash therefore shows no
    /// backtrace; reproduce one under a debugger.
    ///
    /// Call it first thing in `main` (on the main thread, which gets an alternate signal
    /// stack so a stack overflow there is reported too), before a passphrase is read.
    /// Safe to call again.
    /// - Throws: ``VaultError/system(operation:code:)`` when the kernel refuses.
    public static func harden() throws {
        Sodium.ensureInitialized()
        let result = CTouchgateSys_harden_process()
        if result != 0 {
            throw VaultError.system(operation: "disable core dumps", code: -result)
        }
        let installed = CTouchgateSys_install_fatal_signal_handlers("touchgate")
        if installed != 0 {
            throw VaultError.system(operation: "install fatal-signal handlers", code: -installed)
        }
    }
}
