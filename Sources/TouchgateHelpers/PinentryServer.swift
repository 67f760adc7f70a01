import FoundationEssentials
import TouchgateAPI
public import TouchgateTerminal
import Subprocess
// FilePath and FileDescriptor, which swift-subprocess takes.
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// `pinentry-touchgate`: the pinentry side of gpg-agent's Assuan conversation, on standard
/// input and output.
///
/// A `GETPIN` for a key whose keygrip (`SETKEYINFO n/GRIP`) is mapped to an item is
/// answered from the vault after what the item's policy asks for (and, when the agent
/// allowed it, marked `S PASSWORD_FROM_CACHE`). Anything else (an unmapped key, a retry
/// after `SETERROR`, a new passphrase with `SETREPEAT`, `CONFIRM`, `MESSAGE`, a failed
/// touch) goes to the fallback pinentry: it is started, told every option and setting
/// received so far, and the command's conversation is passed through both ways.
public struct PinentryServer {
    let settings: HelperSettings
    let helpers: HelperRequests
    let console: Console

    /// The server for one gpg-agent conversation: `settings` map keygrips to items,
    /// `helpers` asks the service for the program pinentry acts for, `console` reports.
    public init(settings: HelperSettings, helpers: HelperRequests, console: Console) {
        self.settings = settings
        self.helpers = helpers
        self.console = console
    }

    /// gpg-error codes with the pinentry source (5 << 24).
    private enum Failure {
        static let cancelled = 83_886_179      // GPG_ERR_CANCELED
        static let notConfirmed = 83_886_194   // GPG_ERR_NOT_CONFIRMED
        static let unknownCommand = 83_886_355 // GPG_ERR_ASS_UNKNOWN_CMD
        static let noPinentry = 83_886_165     // GPG_ERR_NO_PIN_ENTRY
        static let timeout = 83_886_142        // GPG_ERR_TIMEOUT
    }

    /// What the agent said before the current command, replayed to the fallback.
    private struct State {
        var options: [String] = []
        var settings: [String] = []
        var keygrip: String?
        var hasError = false
        var repeats = false
        var allowCache = false
        /// The user's terminal (`OPTION ttyname`, from GPG_TTY), where touch prompts are shown too.
        var terminal: String?
    }

    /// Serves the agent until `BYE` or the end of input.
    public func serve() async throws {
        // A fallback pinentry that already exited, or an agent that hung up, is a write error
        // to report, not a signal that kills this process (measured: BYE to a fallback that
        // had ended took the process down with SIGPIPE, and the agent got no answer).
        signal(SIGPIPE, SIG_IGN)
        let input = AssuanReader(fd: 0)
        var state = State()
        try AssuanWriter.line("OK Pleased to meet you, process \(getpid())", to: 1)
        while let line = try input.nextText() {
            let (command, argument) = Self.split(line)
            switch command {
            case "":
                continue
            case "BYE":
                try AssuanWriter.line("OK closing connection", to: 1)
                return
            case "OPTION":
                state.options.append(line)
                if argument == "allow-external-password-cache" { state.allowCache = true }
                if argument.hasPrefix("ttyname=") { state.terminal = String(argument.dropFirst("ttyname=".count)) }
                try ok()
            case "SETKEYINFO":
                state.settings.append(line)
                // n/GRIP (normal), s/GRIP (session), u/GRIP (user), or --clear.
                state.keygrip = argument.split(separator: "/", maxSplits: 1).dropFirst().first.map(String.init)
                try ok()
            case "SETERROR":
                state.settings.append(line)
                state.hasError = true
                try ok()
            case "SETREPEAT":
                state.settings.append(line)
                state.repeats = true
                try ok()
            case "RESET":
                state = State(options: state.options, allowCache: state.allowCache, terminal: state.terminal)
                try ok()
            case let setting where setting.hasPrefix("SET") || setting == "CLEARPASSPHRASE":
                state.settings.append(line)
                try ok()
            case "NOP":
                try ok()
            case "GETINFO":
                try info(argument)
            case "GETPIN":
                try await getPin(line, &state, input: input)
                // A passphrase is asked once per SETERROR: a new request starts clean.
                state.hasError = false
                // Cancelled (gpg-agent's SIGINT, a SIGTERM): answered, and nothing more is
                // served; no later command may start anything on the person's terminal.
                if Task.isCancelled { return }
            case "CONFIRM", "MESSAGE":
                try await passThrough(line, state, input: input, otherwise: command == "MESSAGE"
                                ? nil : "ERR \(Failure.notConfirmed) Not confirmed <touchgate>")
            default:
                try AssuanWriter.line("ERR \(Failure.unknownCommand) Unknown IPC command <touchgate>", to: 1)
            }
        }
    }

    private func ok() throws { try AssuanWriter.line("OK", to: 1) }

    private func info(_ what: String) throws {
        switch what {
        case "flavor": try AssuanWriter.line("D touchgate", to: 1)
        case "version": try AssuanWriter.line("D \(Release.version)", to: 1)
        case "pid": try AssuanWriter.line("D \(getpid())", to: 1)
        case "ttyinfo": try AssuanWriter.line("D - - - - 0/0 -", to: 1)
        default:
            try AssuanWriter.line("ERR \(Failure.unknownCommand) Unknown GETINFO item <touchgate>", to: 1)
            return
        }
        try ok()
    }

    private func getPin(_ line: String, _ state: inout State, input: AssuanReader) async throws {
        // The vault answers for a mapped key (the service decides: nil when it is not mapped).
        if let keygrip = state.keygrip, !state.hasError, !state.repeats {
            let interaction = PinentryInteraction(terminal: TerminalInteraction(console: console, assumeYes: true),
                                                  ttyname: state.terminal)
            do {
                if let value = try await helpers.gpgPassphrase(keygrip: keygrip, settings: settings, interaction: interaction) {
                    if state.allowCache { try AssuanWriter.line("S PASSWORD_FROM_CACHE", to: 1) }
                    try AssuanWriter.data(value, to: 1)
                    try ok()
                    return
                }
            } catch let error as ServiceError {
                console.failure(error)
                // Whatever ended the wait once this process was told to stop (a connection the
                // cancellation closed, say) is a cancellation: never a reason for the fallback.
                if error.code == .cancelled || Task.isCancelled {
                    try AssuanWriter.line("ERR \(Failure.cancelled) Operation cancelled <touchgate>", to: 1)
                    return
                }
                // Nobody touched the reader before its deadline: nobody may be there either, so
                // nothing is started on the terminal, where it would read the next command typed.
                if error.code == .timedOut {
                    try AssuanWriter.line("ERR \(Failure.timeout) Timeout <touchgate>", to: 1)
                    return
                }
                // Any other failure: the passphrase can still be typed at the fallback.
            }
        }
        try await passThrough(line, state, input: input,
                        otherwise: "ERR \(Failure.noPinentry) No pinentry <touchgate>")
    }

    /// Runs `line` on the fallback pinentry and relays its answer; without a fallback
    /// answers `otherwise` (or OK when nil).
    private func passThrough(_ line: String, _ state: State, input: AssuanReader, otherwise: String?) async throws {
        guard let program = settings.pinentryFallback else {
            if otherwise != nil {
                console.warning("no fallback pinentry is set; set one with: touchgate pinentry fallback /usr/bin/pinentry-tty")
            }
            try AssuanWriter.line(otherwise ?? "OK", to: 1)
            return
        }
        do {
            try await FallbackPinentry.run(program: program) { child in
                for setting in state.options + state.settings {
                    try child.send(setting)
                    try child.skipReply()
                }
                try child.send(line)
                try child.relay(agent: input)
            }
        } catch let error as ServiceError where error.code == .execFailed {
            // It never started or never greeted: nothing was relayed, so the agent gets the
            // answer it gets without a fallback, and the person the reason.
            console.failure(error)
            try AssuanWriter.line(otherwise ?? "OK", to: 1)
        }
    }

    /// `COMMAND argument` split at the first space.
    static func split(_ line: String) -> (String, String) {
        guard let space = line.firstIndex(of: " ") else { return (line, "") }
        return (String(line[..<space]), String(line[line.index(after: space)...]))
    }
}

/// A real pinentry run as a child for one command, its Assuan stream passed through.
///
/// Started by swift-subprocess in this process's own process group (its default): a
/// terminal pinentry (pinentry-tty, pinentry-curses) must stay in the terminal's
/// foreground group to read from it. Its standard input and output are pipes this side
/// reads and writes line by line; its standard error is ours.
final class FallbackPinentry {
    private let toChild: Int32
    private let fromChild: Int32
    private let reader: AssuanReader

    private init(toChild: Int32, fromChild: Int32) {
        self.toChild = toChild
        self.fromChild = fromChild
        reader = AssuanReader(fd: fromChild)
    }

    /// Starts `program`, waits for its greeting, runs `body` with it, then says BYE and
    /// waits for it to exit.
    static func run(program: String, _ body: (FallbackPinentry) throws -> Void) async throws {
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1]
        // Close-on-exec: only the copies made the child's 0 and 1 reach it (pipe2 is not imported into Swift).
        guard pipe(&input) == 0 else { throw failure(program, errno) }
        guard pipe(&output) == 0 else {
            close(input[0]); close(input[1])
            throw failure(program, errno)
        }
        for descriptor in input + output { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        let child = FallbackPinentry(toChild: input[1], fromChild: output[0])
        do {
            _ = try await Subprocess.run(
                .path(FilePath(program)),
                input: .fileDescriptor(FileDescriptor(rawValue: input[0]), closeAfterSpawningProcess: true),
                output: .fileDescriptor(FileDescriptor(rawValue: output[1]), closeAfterSpawningProcess: true),
                error: .fileDescriptor(.standardError, closeAfterSpawningProcess: false)
            ) { _ in
                defer { child.finish() }
                guard let greeting = try child.reader.nextText(), greeting.hasPrefix("OK") else {
                    throw ServiceError(.execFailed, "the fallback pinentry \(program) did not greet; is it a pinentry?")
                }
                try body(child)
            }
        } catch let error as SubprocessError {
            // Not started: our ends of the pipes are still open (its ends were closed by the spawn or are here).
            child.finish()
            throw failure(program, error.underlyingError?.rawValue ?? ENOENT)
        }
    }

    private static func failure(_ program: String, _ code: Int32) -> ServiceError {
        ServiceError(.execFailed, "cannot run the fallback pinentry \(program): \(String(cString: strerror(code))); "
                     + "set another with: touchgate pinentry fallback PROGRAM")
    }

    func send(_ line: String) throws { try AssuanWriter.line(line, to: toChild) }

    /// Reads up to the child's OK or ERR (the answer to a replayed setting).
    func skipReply() throws {
        while let line = try reader.nextText() {
            if line.hasPrefix("OK") || line.hasPrefix("ERR") { return }
        }
    }

    /// Copies the child's lines to the agent until OK or ERR; an INQUIRE's answer (the
    /// agent's lines up to END or CAN) goes back to the child.
    func relay(agent: AssuanReader) throws {
        while true {
            var done = false
            var inquiry = false
            let more = try reader.nextLine { bytes -> Bool in
                try AssuanWriter.raw(bytes, to: 1)
                try AssuanWriter.raw([0x0A], to: 1)
                done = bytes.starts(with: Array("OK".utf8)) || bytes.starts(with: Array("ERR".utf8))
                inquiry = bytes.starts(with: Array("INQUIRE".utf8))
                return true
            }
            guard more != nil, !done else { return }
            if inquiry {
                while let answered = try agent.nextLine({ bytes -> Bool in
                    try AssuanWriter.raw(bytes, to: toChild)
                    try AssuanWriter.raw([0x0A], to: toChild)
                    return bytes.elementsEqual(Array("END".utf8)) || bytes.elementsEqual(Array("CAN".utf8))
                }), !answered {}
            }
        }
    }

    /// Says BYE and closes this side of both pipes, so the child ends (swift-subprocess waits for it).
    private var finished = false
    private func finish() {
        guard !finished else { return }
        finished = true
        try? send("BYE")
        close(toChild)
        close(fromChild)
    }
}

/// The pinentry's side of a release: prompts to standard error (gpg-agent's, often
/// /dev/null) and to the user's terminal when the agent named one, so the person sees
/// "Touch the reader" where they typed the gpg command.
struct PinentryInteraction: Interaction {
    let terminal: TerminalInteraction
    let ttyname: String?

    func event(_ event: InteractionEvent) {
        terminal.event(event)
        guard let ttyname, ttyname.hasPrefix("/dev/") else { return }
        let descriptor = open(ttyname, O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        Console.write(StoredText.escaped(event.message) + "\r\n", to: descriptor)
    }

    func passphrase(prompt: String, again: Bool) throws -> SecretBytes {
        try terminal.passphrase(prompt: prompt, again: again)
    }

    func newPassphrase(prompt: String) throws -> SecretBytes {
        try terminal.newPassphrase(prompt: prompt)
    }

    func repeatPassphrase(prompt: String) throws -> SecretBytes {
        try terminal.repeatPassphrase(prompt: prompt)
    }

    var canAskAgain: Bool { terminal.canAskAgain }

    func confirm(_ question: String, details: [String]) throws -> Bool {
        try terminal.confirm(question, details: details)
    }
}
