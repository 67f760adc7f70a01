import Synchronization
public import TouchgateAPI

/// Enrollment's scans on a terminal: one line redrawn in place, a bar and the latest prompt
/// or progress, instead of two lines per scan. A hint (a poor scan) and anything else
/// written meanwhile end the line first and stay on lines of their own. Only where standard
/// error is a terminal; a pipe, a log or `--json` get every event as before.
public final class ProgressLine: Sendable {
    /// Whether a bar is on the terminal without its newline yet.
    private let open = Mutex(false)
    /// Cells in the bar.
    static let width = 20

    /// The process's line (standard error is one per process).
    public static let shared = ProgressLine()

    public init() {}

    /// What to write for `event` when it is enrollment progress: the bar redrawn over the
    /// current line (ended with a newline once the last scan is done); nil for any other
    /// event, which is written as a line of its own after ``close()``.
    public func render(_ event: InteractionEvent) -> String? {
        let (done, total, text): (Int, Int, String)
        switch event.event {
        case .fingerNeeded where event.operation == "enroll":
            guard let stage = event.stage, let stages = event.stages, stages > 0 else { return nil }
            (done, total, text) = (stage - 1, stages, event.message)
        case .enrollStage:
            guard let completed = event.completed, let all = event.total, all > 0 else { return nil }
            (done, total, text) = (completed, all, event.message)
        default:
            return nil
        }
        let filled = min(Self.width, max(0, done * Self.width / total))
        let bar = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: Self.width - filled) + "] "
        let finished = event.event == .enrollStage && done >= total
        open.withLock { $0 = !finished }
        // Carriage return, then erase the line: the bar replaces what was there.
        return "\r\u{1B}[2K" + bar + text + (finished ? "\n" : "")
    }

    /// The newline that ends an open bar, or nothing; the bar counts as ended after.
    public func close() -> String {
        open.withLock { open in
            defer { open = false }
            return open ? "\n" : ""
        }
    }
}
