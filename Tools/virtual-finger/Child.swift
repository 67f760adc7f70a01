#if canImport(Glibc)
import Glibc
#endif

/// The command virtual-finger runs, started the way a shell starts a foreground job.
///
/// Foundation's `Process` is not used: it puts the child in a process group of its own
/// (so the terminal's foreground group no longer holds it: reading `/dev/tty` fails with
/// EIO and Ctrl-C does not reach it) and closes every descriptor above 2 (so `3<file`
/// is lost). `posix_spawnp` keeps this process group and every inherited descriptor.
struct Child {
    /// The child's process id.
    let pid: pid_t

    /// Starts `command` (looked up on PATH, with this process's environment) in this
    /// process group, with standard error on `standardError` and every other inherited
    /// descriptor as it is; descriptors opened with `O_CLOEXEC` are not passed.
    ///
    /// While it runs, this process ignores SIGINT and SIGQUIT (the terminal sends them to
    /// the child as well, which decides what they mean) and forwards SIGTERM and SIGHUP to
    /// it. The child starts with the default action for all four and none of them blocked
    /// (whoever started this process may have blocked them); other blocked signals stay so.
    /// - Returns: the child, or the `errno` of a failed start (ENOENT: not found).
    static func spawn(_ command: [String], standardError: Int32) -> Result<Child, Errno> {
        let handled = [SIGINT, SIGQUIT, SIGTERM, SIGHUP], forwarded = [SIGTERM, SIGHUP]
        var forwardedSet = sigset_t(), inherited = sigset_t(), defaults = sigset_t()
        sigemptyset(&forwardedSet)
        for number in forwarded { sigaddset(&forwardedSet, number) }
        // Blocked until the pid is known, so that neither signal can be lost or leave an
        // orphan; unblocked afterwards even if they were blocked before, to be forwarded.
        pthread_sigmask(SIG_BLOCK, &forwardedSet, &inherited)
        defer { pthread_sigmask(SIG_UNBLOCK, &forwardedSet, nil) }
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
        for number in forwarded {
            signal(number) { number in
                if forwardTarget > 0 { kill(forwardTarget, number) } else { _exit(128 + number) }
            }
        }

        sigemptyset(&defaults)
        var mask = inherited
        for number in handled {
            sigaddset(&defaults, number)
            sigdelset(&mask, number)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, standardError, STDERR_FILENO)

        let arguments = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        let failure = posix_spawnp(&pid, command[0], &actions, &attributes, arguments, environ)
        guard failure == 0 else { return .failure(Errno(failure)) }
        forwardTarget = pid
        return .success(Child(pid: pid))
    }

    /// Waits for the child to end; returns its exit status, or 128 + N when signal N killed it.
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return 127 }
        }
        let signalNumber = status & 0x7F  // WTERMSIG; 0 when it exited (WIFEXITED)
        return signalNumber == 0 ? (status >> 8) & 0xFF : 128 + signalNumber
    }
}

/// An `errno` value with its message.
struct Errno: Error, CustomStringConvertible {
    /// The C value.
    let code: Int32

    init(_ code: Int32) { self.code = code }

    var description: String { String(cString: strerror(code)) }
}

/// The child that SIGTERM and SIGHUP are forwarded to; 0 before it starts.
/// `nonisolated(unsafe)`: written once by `Child.spawn` while both signals are blocked,
/// only read (by the signal handler) afterwards.
nonisolated(unsafe) private var forwardTarget: pid_t = 0
