public import FoundationEssentials
public import Logging
import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// touchgated's log: one line per message on standard error, `touchgated: message`, which
/// systemd's journal keeps. Under the journal (`JOURNAL_STREAM` names standard error) each
/// line starts with its syslog priority (`<4>` for a warning), which the journal takes as
/// the entry's priority, so `journalctl -p warning -u touchgated` shows what needs a look.
/// Messages are the daemon's own words: never a secret, a template or a passphrase.
public struct StandardErrorLogHandler: LogHandler {
    /// The first word of every line (`touchgated`).
    public let program: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    /// Whether the lines carry syslog priorities (standard error is the journal).
    private let prioritized: Bool

    /// A handler for `program`; `environment` decides whether standard error is the journal.
    public init(program: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.program = program
        prioritized = Self.standardErrorIsJournal(environment["JOURNAL_STREAM"])
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let line = Self.line(event.message.description, program: program,
                             priority: prioritized ? Self.syslogPriority(event.level) : nil)
        line.utf8CString.withUnsafeBufferPointer { bytes in
            // One write per line, so lines from several threads do not interleave.
            _ = write(2, bytes.baseAddress, bytes.count - 1)
        }
    }

    /// One line of the log: `message` with its control characters escaped (a newline in a
    /// peer's executable name cannot forge a line of its own), after `<priority>` when given.
    package static func line(_ message: String, program: String, priority: Int?) -> String {
        (priority.map { "<\($0)>" } ?? "") + program + ": " + StoredText.escaped(message) + "\n"
    }

    /// The syslog priority of `level` (sd-daemon(3)'s `<N>` prefixes).
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Whether `JOURNAL_STREAM` (`device:inode`) names the file standard error is.
    static func standardErrorIsJournal(_ stream: String?) -> Bool {
        guard let stream, let colon = stream.firstIndex(of: ":"),
              let device = UInt64(stream[..<colon]), let inode = UInt64(stream[stream.index(after: colon)...]) else {
            return false
        }
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
