import TouchgateAPI
import TouchgateTerminal
import FoundationEssentials
import Subprocess
#if canImport(Glibc)
import Glibc
#endif

/// Shows long text on a terminal through a pager, as git and journalctl do.
///
/// The pager is `$PAGER` (run by `sh -c`; empty or `cat` means none), else
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
    static func show(_ text: String, allowed: Bool) async {
        guard allowed, let window = windowSize(), rows(of: text, columns: window.columns) > window.rows,
              let pager = command() else {
            Console.write(text, to: 1)
            return
        }
        if !(await run(pager, text)) { Console.write(text, to: 1) }
    }

    /// The pager to run, or `nil` for none: `$PAGER` through the shell, else `less -FRX`.
    struct Command: Equatable {
        /// `$PAGER`, run by `sh -c` (nil: `less`; both from `PATH`).
        var shellCommand: String?
        /// The arguments as the pager gets them.
        var arguments: [String] { shellCommand.map { ["-c", $0] } ?? ["-FRX"] }
    }

    /// The pager's command, or `nil` for none.
    static func command() -> Command? {
        if let configured = Invocation.environment("PAGER") {
            let trimmed = configured.trimmingSpaces()
            return trimmed.isEmpty || trimmed == "cat" ? nil : Command(shellCommand: configured)
        }
        return Command(shellCommand: nil)
    }

    /// Runs `pager` (swift-subprocess) with `text` on its standard input and the terminal as
    /// its output, and waits for it; `false` when it could not be started (nothing was
    /// written then).
    ///
    /// While the pager runs, touchgate ignores SIGINT and SIGQUIT (they are meant for the
    /// pager, which starts with every signal at its default) and SIGPIPE (the reader may quit
    /// early: what it did not take is not shown).
    private static func run(_ pager: Command, _ text: String) async -> Bool {
        let previous = [SIGINT, SIGQUIT, SIGPIPE].map { ($0, signal($0, SIG_IGN)) }
        defer { for (number, handler) in previous { signal(number, handler) } }
        let executable: Executable = .name(pager.shellCommand == nil ? "less" : "sh")
        do {
            _ = try await Subprocess.run(executable, arguments: Arguments(pager.arguments), input: .inputWriter,
                                         output: .currentStandardOutput, error: .currentStandardError) { execution in
                _ = try? await execution.standardInputWriter.write(Array(text.utf8))
                try? await execution.standardInputWriter.finish()
            }
            return true
        } catch {
            return false
        }
    }
}
