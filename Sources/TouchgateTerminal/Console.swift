import FoundationEssentials
public import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// Where a command speaks: prompts and progress to standard error, the result to
/// standard output. With `--json`, each event is a JSON object on its own line of
/// standard error and the result is one JSON object on standard output, both in the
/// wire types' one JSON form.
public struct Console: Sendable {
    /// Whether `--json` was given.
    public let json: Bool

    /// A console for `--json` output or for people.
    public init(json: Bool) {
        self.json = json
    }

    /// A prompt, progress line or hint.
    public func event(_ event: InteractionEvent) {
        if json {
            Self.write(WireCoding.line(event) + "\n", to: 2)
            return
        }
        if Self.standardErrorIsTerminal, let drawn = ProgressLine.shared.render(event) {
            FileOutput.write(drawn, to: 2)
            return
        }
        if let line = TerminalText.line(for: event.event, message: event.message) {
            Self.write(line + "\n", to: 2)
        }
    }

    /// The command's result: `text` for people, `report` (under `"result": result`) for `--json`.
    /// The text is made only when it is shown.
    public func result<Report: Encodable & Sendable>(_ result: String, _ report: Report, text: @autoclosure () -> String?) {
        if json {
            Self.write(WireCoding.line(Outcome(result, report)) + "\n", to: 1)
        } else if let text = text() {
            Self.write(text + "\n", to: 1)
        }
    }

    /// A warning that does not change the outcome.
    public func warning(_ message: String) {
        if json {
            Self.write(WireCoding.line(WarningLine(message: message)) + "\n", to: 2)
        } else {
            Self.write("touchgate: warning: \(message)\n", to: 2)
        }
    }

    /// Reports a failure on standard error (and as the JSON result with `--json`).
    public func failure(_ error: ServiceError) {
        if json {
            Self.write(WireCoding.line(ErrorLine(event: "error", error: error)) + "\n", to: 2)
            Self.write(WireCoding.line(ErrorLine(result: "error", error: error)) + "\n", to: 1)
        } else {
            Self.write(TerminalText.failure(error.message) + "\n", to: 2)
        }
    }

    /// Writes all of `text` to a file descriptor (1 or 2), unbuffered (``FileOutput``), after
    /// ending an enrollment bar left open on the terminal (``ProgressLine``).
    public static func write(_ text: String, to fd: Int32) {
        let ended = ProgressLine.shared.close()
        if !ended.isEmpty { FileOutput.write(ended, to: 2) }
        FileOutput.write(text, to: fd)
    }

    /// Whether standard error is a terminal that can redraw a line (not TERM=dumb).
    static let standardErrorIsTerminal = isatty(2) == 1 && getenv("TERM").map { String(cString: $0) } != "dumb"
}

/// A failure as one JSON line: `{"event"|"result": …, "error": code, "message": …, …}`.
private struct ErrorLine: Encodable {
    var event: String?
    var result: String?
    var error: ServiceError

    init(event: String? = nil, result: String? = nil, error: ServiceError) {
        self.event = event
        self.result = result
        self.error = error
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(event, forKey: .event)
        try container.encodeIfPresent(result, forKey: .result)
        try container.encode(error.code, forKey: .error)
        try container.encode(error.message, forKey: .message)
        try container.encodeIfPresent(error.attemptsLeft, forKey: .attemptsLeft)
        try container.encodeIfPresent(error.retryAfterSeconds, forKey: .retryAfterSeconds)
    }

    private enum Key: String, CodingKey {
        case event, result, error, message, attemptsLeft, retryAfterSeconds
    }
}

/// `{"event": "warning", "message": …}`.
private struct WarningLine: Encodable {
    var event = "warning"
    var message: String
}
