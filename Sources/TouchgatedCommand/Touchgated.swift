public import ArgumentParser
import Dispatch
import FoundationEssentials
public import Logging
import TouchgateBasics
import TouchgateDaemon
import TouchgateFleet
import TouchgatePasskeys
import TouchgateService
import TouchgateShipping
import TouchgateSocket
import Glibc

/// `touchgated`: the system daemon. Under systemd the socket comes from socket activation
/// and the state directory from `StateDirectory=` ($STATE_DIRECTORY); `--socket` runs it in
/// the foreground on a socket of its own (tests, or a system without systemd). The timeouts
/// and bounds are ``DaemonSettings``'s.
public struct Touchgated: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "touchgated",
        abstract: "Touchgate's system daemon: fingerprint-gated secrets for every user of this machine.",
        discussion: """
            Each user's store lives under the state directory, reachable only by touchgated's \
            own user; clients speak to it over the socket (docs/PROTOCOL.md). Under systemd the \
            socket comes from touchgated.socket and the state directory from StateDirectory=.
            Without systemd, one command starts it in the foreground (it logs to standard error, \
            and stops on Ctrl-C or SIGTERM): as root, with the user the touchgated package makes, \
            it makes /run/touchgate (mode 0755) and /var/lib/touchgate (0700) that user's, then \
            runs as that user and listens on /run/touchgate/socket, where clients look first:
              sudo touchgated --user touchgated
            Without the package, make the user first:
              sudo useradd --system --user-group --no-create-home --shell /usr/sbin/nologin touchgated
            Started as another user, it makes the socket's directory itself when it can, and it \
            refuses to run as root unless --user or --allow-root is given.
            Exit status 64: a bad option, or root without --allow-root; 1: the daemon could not \
            start (the message says why).
            """,
        version: Release.version)

    @Option(name: .customLong("user"),
            help: ArgumentHelp("Started as root: make the socket's directory (default /run/touchgate) and the state "
                               + "directory this user's, then run as this user.", valueName: "name"))
    var user: String?

    @Flag(name: .customLong("allow-root"),
          help: "Run as root anyway (every user's store and the readers in a root process; not advised).")
    var allowRoot = false

    @Option(help: ArgumentHelp("Listen here (default: the socket systemd passes).", valueName: "path"))
    var socket: String?

    @Option(name: .customLong("state-dir"),
            help: ArgumentHelp("Every user's store (default: $STATE_DIRECTORY or /var/lib/touchgate).", valueName: "dir"))
    var stateDirectory: String?

    @Option(name: .customLong("fleet-config"),
            help: ArgumentHelp("Ship audit trails as this file says, when it exists.",
                               valueName: "file"))
    var fleetConfiguration = FleetConfiguration.defaultPath

    @Option(name: .customLong("audit-retention-years"),
            help: ArgumentHelp("Keep audit records this many years, at least 6 (default 6): `audit prune` refuses any "
                               + "cutoff inside it.", valueName: "n"))
    var auditRetentionYears: String?

    @Option(name: .customLong("finger-timeout"),
            help: ArgumentHelp("End a reader wait with no finger after this long (default 60).", valueName: "seconds"))
    var fingerTimeout: Double?

    @Option(name: .customLong("answer-timeout"),
            help: ArgumentHelp("End a question nobody answers after this long (default 120).", valueName: "seconds"))
    var answerTimeout: Double?

    @Option(name: .customLong("connections-per-user"),
            help: ArgumentHelp("Connections one user may hold open (default 16).", valueName: "n"))
    var connectionsPerUser: Int?

    @Option(help: ArgumentHelp("Connections in all, lowered to what LimitMEMLOCK allows (default 256).", valueName: "n"))
    var connections: Int?

    @Option(name: .customLong("log-level"),
            help: ArgumentHelp("Log messages of this level and above (default info); debug adds a line per request.",
                               valueName: "level"))
    var logLevel: Logger.Level = .info

    @Option(name: .customLong("reader-placement"),
            help: ArgumentHelp("""
                Where the reader is, for a closed lid: built-in (no finger is asked for while the lid is closed), \
                external (the lid is never looked at), or auto (default: as udev says, fixed ports built in and \
                removable ones external; where it cannot tell, none while the lid is closed and the machine is \
                not docked).
                """, valueName: "where"))
    var readerPlacement: ReaderPresence.Placement = .auto

    @Option(name: .customLong("agent-group"),
            help: ArgumentHelp("The group touchgate-cli is installed set-group-ID to: only a connection made with it "
                               + "may name the program a Secret Service request is for (default touchgate-agent).",
                               valueName: "group"))
    var agentGroup: String?

    @Option(name: .customLong("request-burst"),
            help: ArgumentHelp("Requests writing audit records one user may make at once (default 100).", valueName: "n"))
    var requestBurst: Int?

    @Option(name: .customLong("requests-per-minute"),
            help: ArgumentHelp("...and then per minute (default 60).", valueName: "n"))
    var requestsPerMinute: Double?

    @Flag(help: ArgumentHelp("Make a passkey authenticator (a USB security key on /dev/uhid) for each user with a "
                             + "store here while they have a session at a seat; its hidraw node is theirs alone (udev "
                             + "rule 69-touchgate-passkey). Also on when the environment has \(Touchgated.passkeysVariable)=seat "
                             + "(what touchgate passkey enable sets)."))
    var passkeys = false

    /// The environment's word for `--passkeys`, which `touchgate passkey enable` puts in a drop-in of the unit.
    static let passkeysVariable = "TOUCHGATED_PASSKEYS"

    public func validate() throws {
        for (name, value) in [("--finger-timeout", fingerTimeout), ("--answer-timeout", answerTimeout),
                              ("--requests-per-minute", requestsPerMinute),
                              ("--connections-per-user", connectionsPerUser.map(Double.init)),
                              ("--connections", connections.map(Double.init)), ("--request-burst", requestBurst.map(Double.init))] {
            if let value, !(value > 0 && value.isFinite) { throw ValidationError("\(name) needs a number above zero") }
        }
        if let auditRetentionYears {
            do { _ = try AuditRetention.years(parsing: auditRetentionYears) } catch { throw ValidationError(error.message) }
        }
        // A retention from the unit file is checked as the option is: a typo must not leave six years in force.
        if let text = ProcessInfo.processInfo.environment[AuditRetention.environmentVariable] {
            do { _ = try AuditRetention.years(parsing: text) } catch {
                throw ValidationError("\(AuditRetention.environmentVariable): \(error.message)")
            }
        }
    }

    /// The settings the options give, over the defaults.
    var settings: DaemonSettings {
        var settings = DaemonSettings()
        if let fingerTimeout { settings.fingerTimeout = .milliseconds(Int64(fingerTimeout * 1000)) }
        if let answerTimeout { settings.answerTimeout = .milliseconds(Int64(answerTimeout * 1000)) }
        if let connectionsPerUser { settings.connectionsPerUser = connectionsPerUser }
        if let connections { settings.connections = connections }
        if let requestBurst { settings.requestBurst = requestBurst }
        if let requestsPerMinute { settings.requestsPerSecond = requestsPerMinute / 60 }
        settings.readerPlacement = readerPlacement
        if let agentGroup { settings.agentGroup = agentGroup }
        return settings
    }

    public init() {}

    /// Parses this process's command line and runs the daemon (ArgumentParser's `main`), for
    /// the executables that are touchgated: its own target and touchgate-cli started by that name.
    public static func runCommandLine() async {
        await main()
    }

    public func run() async throws {
        // With --user, the socket is the system's unless another is named.
        let socket = self.socket ?? (user != nil ? Invocation.systemSocket : nil)
        if let user, let socket {
            Self.become(user, socket: socket,
                        stateDirectory: stateDirectory ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"]
                            ?? "/var/lib/touchgate")
        }
        if geteuid() == 0 && !allowRoot {
            // As started (installed, touchgated is a name of touchgate-cli: the resolved file would
            // start the command line instead).
            let program = SiblingProgram.startedBy() ?? "touchgated"
            let options = (socket.map { " --socket \($0)" } ?? "") + " --state-dir \(stateDirectory ?? "/var/lib/touchgate")"
            Self.fail("refusing to run as root: touchgated runs as a user of its own (touchgated), so that what it "
                      + "holds and a flaw in it stay away from the rest of the machine. Run it as that user:\n"
                      + "  sudo \(program) --user touchgated\(options)\n"
                      + "(touchgated --help says how to make that user), or pass --allow-root to run as root anyway",
                      status: 64)
        }
        do {
            try TouchgateService.hardenProcess()
        } catch {
            Self.fail(error.message)
        }
        umask(0o077)
        let logger = Self.logger(level: logLevel)
        if let auditRetentionYears, let years = try? AuditRetention.years(parsing: auditRetentionYears) {
            // Every user's service reads it from here (AuditRetention.configuredYears); set
            // before the daemon starts any thread of its own.
            setenv(AuditRetention.environmentVariable, String(years), 1)
        }
        let stateDirectory = stateDirectory ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"] ?? "/var/lib/touchgate"

        // Keys, vaults and trails live there: refuse to serve from a state directory others can reach.
        let loosened = StateDirectoryCheck.problems(in: URL(fileURLWithPath: stateDirectory))
        if !loosened.isEmpty {
            Self.fail("refusing to start: the state directory must be private to touchgated's user, and\n  "
                      + loosened.joined(separator: "\n  "))
        }

        let listener: UnixListener
        do {
            if let socket {
                try Self.makeSocketDirectory(for: socket)
                listener = try UnixListener.bind(path: socket)
            } else if let activated = UnixListener.fromSystemd() {
                listener = activated
            } else {
                Self.fail("no socket: run under systemd (touchgated.socket) or pass --socket PATH", status: 64)
            }
        } catch let error as ServiceError {
            Self.fail(error.message)
        } catch {
            Self.fail("\(error)")
        }

        let daemon: Daemon
        do {
            let fleet = FleetShipping(configurationPath: fleetConfiguration) { PostgresCollector(configuration: $0) }
            daemon = try Daemon(listener: listener, stateDirectory: URL(fileURLWithPath: stateDirectory), fleet: fleet,
                                settings: settings, logger: logger)
        } catch {
            Self.fail("cannot use the state directory \(stateDirectory): \(error)")
        }

        // SIGTERM and SIGINT stop accepting; requests in progress are cancelled with their clients.
        var signalSources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { daemon.stop() }
            source.resume()
            signalSources.append(source)
        }

        logger.info("serving on \(socket ?? "the socket systemd passed")")
        let devices = Self.passkeyDevices(on: passkeys, daemon: daemon, logger: logger)
        await daemon.run()
        devices?.cancel()
        await devices?.value
        withExtendedLifetime(signalSources) {}
    }

    /// With `--passkeys` (or its environment variable), the task that keeps a passkey device for
    /// each user at a seat, until cancelled.
    static func passkeyDevices(on flag: Bool, daemon: Daemon, logger: Logger) -> Task<Void, Never>? {
        let word = ProcessInfo.processInfo.environment[passkeysVariable] ?? ""
        guard flag || word == "seat" else {
            if !word.isEmpty, word != "off" {
                logger.warning("\(passkeysVariable)=\(word) is neither seat nor off: no passkey devices are made")
            }
            return nil
        }
        let devices = SeatPasskeyDevices(
            seatUsers: { try await SeatStandings.seatUsers() }, hasStore: { daemon.storeOwners.contains($0) },
            requests: { daemon.requests(for: $0) }, interaction: { prompts(of: $0, logger: logger) },
            log: { logger.notice("\($0)") })
        logger.info("passkey devices: one for each user with a store here while they have a session at a seat")
        return Task { await devices.run() }
    }

    /// What the device of `uid` tells its owner: the daemon has no terminal or desktop of hers,
    /// so what a ceremony waits for goes to her `touchgate passkey prompts` (desktop notices)
    /// through the service's board, and to the log when none runs, beside the browser's own
    /// prompt; refusals to the log as well.
    static func prompts(of uid: UInt32, logger: Logger) -> PasskeyPrompts {
        let board = PasskeyPromptBoard.shared
        return PasskeyPrompts(
            ended: { board.post(InteractionEvent(.touchEnded, "the wait for a touch is over"), to: uid) },
            refused: { why in
                logger.notice("passkey device of uid \(uid): \(why)")
                board.post(InteractionEvent(.notice, why), to: uid)
            }) { event in
            if board.post(event, to: uid) == 0, event.event == .touchNeeded {
                logger.info("passkey device of uid \(uid): \(event.message) (no touchgate passkey prompts of theirs runs)")
            }
        }
    }

    /// Started as root with `--user NAME`: makes the socket's directory (0755, every user's
    /// clients reach the socket through it) and the state directory (0700) that user's when
    /// missing, refuses ones that belong to someone else, then becomes the user (its groups,
    /// its group, its uid, for good). Exits with a message saying what to do when any step fails.
    static func become(_ name: String, socket: String, stateDirectory: String) {
        guard geteuid() == 0 else {
            fail("--user \(name) is for a start as root (sudo touchgated --user \(name)); running as uid \(geteuid()) "
                 + "already, leave it out", status: 64)
        }
        guard let entry = getpwnam(name) else {
            fail("there is no user \(name): the touchgated package makes it; without it: sudo useradd --system "
                 + "--user-group --no-create-home --shell /usr/sbin/nologin \(name)", status: 64)
        }
        let uid = entry.pointee.pw_uid, gid = entry.pointee.pw_gid
        guard uid != 0 else { fail("--user \(name) is root; name touchgated's own user", status: 64) }
        for (directory, mode) in [(PathText.deletingLastComponent(of: socket), mode_t(0o755)), (stateDirectory, mode_t(0o700))]
        where !directory.isEmpty {
            let made = mkdir(directory, mode) == 0
            if !made && errno != EEXIST {
                fail("cannot make \(directory): \(String(cString: strerror(errno)))")
            }
            // Everything below acts on the directory opened once, without following a link: a
            // path looked at and then changed could be swapped for a link to /etc in between
            // by whoever may write its parent.
            let opened = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            var info = stat()
            guard opened >= 0, fstat(opened, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                fail("\(directory) is not a directory (a symbolic link is not accepted); move it away")
            }
            defer { close(opened) }
            if made {
                guard info.st_uid == 0, fchown(opened, uid, gid) == 0, fchmod(opened, mode) == 0 else {
                    fail("cannot give \(directory) to \(name): \(String(cString: strerror(errno)))")
                }
            } else if info.st_uid != uid {
                fail("\(directory) belongs to uid \(info.st_uid), not to \(name) (uid \(uid)); if it is touchgated's: "
                     + "sudo chown -R \(name): \(directory)")
            }
        }
        // Groups first, then the group, then the uid: after setuid nothing else could change.
        guard initgroups(name, gid) == 0, setgid(gid) == 0, setuid(uid) == 0,
              getuid() == uid, geteuid() == uid, getegid() == gid, setuid(0) != 0 else {
            fail("cannot become \(name): \(String(cString: strerror(errno)))")
        }
        // Then this program again, as the user, with the socket and state directory named: the
        // Swift runtime's main thread has ended by now, and a thread that ended keeps the
        // credentials it had (the process would show as root in /proc and ps).
        var arguments: [String] = []
        var words = CommandLine.arguments.dropFirst()[...]
        while let word = words.popFirst() {
            if word == "--user" { _ = words.popFirst(); continue }
            if word.hasPrefix("--user=") { continue }
            arguments.append(word)
        }
        if !arguments.contains(where: { $0 == "--socket" || $0.hasPrefix("--socket=") }) { arguments += ["--socket", socket] }
        if !arguments.contains(where: { $0 == "--state-dir" || $0.hasPrefix("--state-dir=") }) {
            arguments += ["--state-dir", stateDirectory]
        }
        let program = SiblingProgram.startedBy() ?? CommandLine.arguments[0]
        var argv: [UnsafeMutablePointer<CChar>?] = ([CommandLine.arguments[0]] + arguments).map { strdup($0) } + [nil]
        execv(program, &argv)
        fail("cannot start \(program) again as \(name): \(String(cString: strerror(errno)))")
    }

    /// Makes the directory `socket` goes in (mode 0755: every user's clients reach the socket
    /// through it) when it is missing and its parent exists, as systemd's socket unit does
    /// for /run/touchgate; says what to run when it cannot.
    static func makeSocketDirectory(for socket: String) throws(ServiceError) {
        let directory = PathText.deletingLastComponent(of: socket)
        guard !directory.isEmpty else { return }
        if mkdir(directory, 0o755) == 0 {
            chmod(directory, 0o755)  // past the umask; a directory already there is left as it is
            return
        }
        let number = errno
        guard number != EEXIST else { return }
        throw ServiceError(.error, "cannot make \(directory) for the socket (\(String(cString: strerror(number)))); "
                           + "make it as root: sudo install -d -o touchgated -g touchgated -m 0755 \(directory)")
    }

    /// The daemon's logger: `touchgated: message` lines on standard error (the journal under systemd).
    static func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "touchgated") { _ in StandardErrorLogHandler(program: "touchgated") }
        logger.logLevel = level
        return logger
    }

    static func fail(_ message: String, status: Int32 = 1) -> Never {
        FileOutput.write("touchgated: \(message)\n", to: 2)
        Glibc.exit(status)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

extension ReaderPresence.Placement: ExpressibleByArgument {}
