#if canImport(Glibc)
import Glibc
#endif
import CTouchgateSys

/// Process-wide protections to apply once, first thing in the `main` of any program that
/// handles secrets (every Touchgate executable).
public enum ProcessProtection {
    /// Makes the process non-dumpable (no core files, no ptrace by other unprivileged
    /// processes of the same user) and makes every fatal signal end the process at once
    /// with its secrets wiped.
    ///
    /// The fatal-signal handler replaces the Swift runtime's crash backtracer (which
    /// prints registers and memory, and could let a process sent `kill -SEGV` carry on).
    /// On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGQUIT, SIGXCPU or
    /// SIGXFSZ, whether a real fault or sent by `kill`, it zeroes every live
    /// ``SecretBytes`` and ``SecretBuffer`` allocation, writes the one line
    /// `touchgate: stopped by fatal signal N (NAME); memory wiped, nothing further released`
    /// to standard error and exits with status 128 + N. A crash therefore shows no
    /// backtrace; reproduce one under a debugger.
    ///
    /// Call it on the main thread (which gets an alternate signal stack so a stack overflow
    /// there is reported too), before a passphrase is read. Safe to call again.
    /// - Throws: ``ServiceError`` when the kernel refuses; the program must then stop.
    public static func apply() throws(ServiceError) {
        let result = CTouchgateSys_harden_process()
        if result != 0 {
            throw ServiceError(.error, "cannot disable core dumps (\(String(cString: strerror(-result)))); "
                               + "refusing to handle secrets")
        }
        let installed = CTouchgateSys_install_fatal_signal_handlers("touchgate")
        if installed != 0 {
            throw ServiceError(.error, "cannot install the fatal-signal handlers (\(String(cString: strerror(-installed)))); "
                               + "refusing to handle secrets")
        }
    }
}
