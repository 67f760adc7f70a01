import TouchgateAPI
import TouchgateTerminal
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Shows long text on a terminal through a pager, as git and journalctl do.
///
/// The pager is `$PAGER` (run by `/bin/sh -c`; empty or `cat` means none), else
/// `less -FRX` when it is installed, else none. It is used only when standard output is
/// a terminal and the text needs more rows than the window has; otherwise the text is
/// written straight to standard output.
enum Pager {
    /// The window's size in rows and columns, when standard output is a terminal that
    /// reports one.
    static func windowSize() -> (rows: Int, columns: Int)? {
        guard isatty(1) == 1 else { return nil }
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 else { return nil }
        return (Int(size.ws_row), max(1, Int(size.ws_col)))
    }

    /// How many rows `text` fills in a window `columns` wide (long lines wrap).
    static func rows(of text: String, columns: Int) -> Int {
        text.split(separator: "\n", omittingEmptySubsequences: false).reduce(0) { total, line in
            total + max(1, (line.count + columns - 1) / columns)
        }
    }

    /// Writes `text` (which should end in a newline) to standard output, through the pager
    /// when `allowed`, standard output is a terminal and the text is taller than the window.
    /// Returns once the pager has quit.
    static func show(_ text: String, allowed: Bool) {
        guard allowed, let window = windowSize(), rows(of: text, columns: window.columns) > window.rows,
              let pager = command() else {
            Console.write(text, to: 1)
            return
        }
        if !run(pager, text) { Console.write(text, to: 1) }
    }

    /// The pager's argument vector, or `nil` for none.
    static func command() -> [String]? {
        if let configured = ProcessInfo.processInfo.environment["PAGER"] {
            let trimmed = configured.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty || trimmed == "cat" ? nil : ["/bin/sh", "-c", configured]
        }
        return ["less", "-FRX"]
    }

    /// Runs `arguments` (searched in `PATH`) with `text` on its standard input and waits
    /// for it; `false` when it could not be started (nothing was written then).
    ///
    /// While the pager runs, touchgate ignores SIGINT and SIGQUIT (they are meant for the
    /// pager, which gets them at their defaults) and SIGPIPE (the reader may quit early).
    private static func run(_ arguments: [String], _ text: String) -> Bool {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return false }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, readEnd, 0)
        posix_spawn_file_actions_addclose(&actions, readEnd)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGQUIT, SIGTERM, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let previous = [SIGINT, SIGQUIT, SIGPIPE].map { ($0, signal($0, SIG_IGN)) }
        defer { for (number, handler) in previous { signal(number, handler) } }

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ)
        close(readEnd)
        guard spawned == 0 else {
            close(writeEnd)
            return false
        }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { break }  // EPIPE: the reader quit before the end
            bytes = bytes.dropFirst(written)
        }
        close(writeEnd)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return true
    }
}
