import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate secret-service`: the desktop's keyring API (`org.freedesktop.secrets`) over
/// the vault, for browsers, editors, `git` and Python's `keyring`.
struct SecretServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret-service",
        abstract: "Serve the desktop's keyring API (the Secret Service) from the vault.",
        discussion: """
            Programs that keep secrets through the Secret Service (libsecret, secret-tool, \
            git-credential-libsecret, Python's keyring) find them in the vault, each program's \
            first read of an item approved by a touch that names it. Only one provider can own \
            the bus name: enable makes D-Bus start Touchgate's instead of gnome-keyring's or \
            KWallet's the next time the name is free; disable gives it back.
            """,
        subcommands: [Serve.self, Enable.self, Disable.self])

    /// Where D-Bus looks for this user's activatable services, ahead of the system's.
    static func activationFile() throws(ServiceError) -> String {
        let environment = ProcessInfo.processInfo.environment
        let data: String
        if let given = environment["XDG_DATA_HOME"], given.hasPrefix("/") {
            data = given
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            data = home + "/.local/share"
        } else {
            throw ServiceError(.usage, "neither XDG_DATA_HOME nor HOME is set, so there is no place for the D-Bus service file")
        }
        return data + "/dbus-1/services/org.freedesktop.secrets.service"
    }

    /// Whether the user unit is where the user's systemd finds it.
    static var systemdUnitInstalled: Bool {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? ""
        let directories = [environment["XDG_CONFIG_HOME"].map { $0 + "/systemd/user" } ?? home + "/.config/systemd/user",
                           (environment["XDG_DATA_HOME"] ?? home + "/.local/share") + "/systemd/user",
                           "/etc/systemd/user", "/usr/local/lib/systemd/user", "/usr/lib/systemd/user"]
        return directories.contains { FileManager.default.fileExists(atPath: $0 + "/touchgate-secret-service.service") }
    }

    /// Has the session bus, if there is one, read its service files again: dbus-daemon does
    /// not see a file in a directory that did not exist when it started.
    static func reloadBus() -> Bool {
        guard let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            return false
        }
        return ServiceChoice.requiredHost.reloadSessionBus(address: address)
    }

    /// The mark that says a service file is Touchgate's (disable removes no other).
    static let mark = "# Written by touchgate secret-service enable; touchgate secret-service disable removes it."

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Serve the Secret Service on the session bus until stopped.",
            discussion: """
                What D-Bus starts once enabled. Requests go where your other commands' go: to \
                touchgated, else to touchgate agent, else to the store in this process. Exits with \
                9 when another program (gnome-keyring, KWallet, or one posing as a keyring, said \
                as such) owns org.freedesktop.secrets.
                """)

        @OptionGroup var common: CommonOptions

        @Option(help: ArgumentHelp("The bus to serve (default: DBUS_SESSION_BUS_ADDRESS).", valueName: "ADDRESS"))
        var address: String?

        func run() async throws {
            let given = address
            try await CommandRunner.run(json: common.json) { console in
                // Started by D-Bus activation, the bus that asked is the starter's.
                let environment = ProcessInfo.processInfo.environment
                guard let address = given ?? environment["DBUS_STARTER_ADDRESS"] ?? environment["DBUS_SESSION_BUS_ADDRESS"],
                      !address.isEmpty else {
                    throw ServiceError(.usage, "no session bus: DBUS_SESSION_BUS_ADDRESS is not set (pass --address)")
                }
                let provider = ServiceChoice.requiredHost.secretService(requests: { ServiceChoice.resolve(for: $0) }) {
                    console.event($0)
                }
                if let refusal = try provider.start(address: address).refusal {
                    throw ServiceError(.alreadyExists, refusal)
                }
                console.event(InteractionEvent(.notice, "serving the Secret Service (org.freedesktop.secrets)"))
                await Self.waitForStop { provider.isServing }
                provider.stop()
                return ExitStatus.success
            }
        }

        /// Returns at SIGTERM, SIGINT or SIGHUP, or once `serving` turns false (the bus went away).
        static func waitForStop(while serving: @escaping @Sendable () -> Bool) async {
            await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
                SystemThread.detach(name: "touchgate-signals") {
                    var signals = sigset_t()
                    sigemptyset(&signals)
                    for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
                    pthread_sigmask(SIG_BLOCK, &signals, nil)
                    var wait = timespec(tv_sec: 0, tv_nsec: 500_000_000)
                    while serving(), sigtimedwait(&signals, nil, &wait) < 0 {}
                    stopped.resume()
                }
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable",
            abstract: "Let D-Bus start Touchgate's Secret Service instead of gnome-keyring's or KWallet's.",
            discussion: """
                Writes a D-Bus service file for org.freedesktop.secrets in your own data directory \
                ($XDG_DATA_HOME/dbus-1/services), which D-Bus reads before the system's. A provider \
                running now keeps the name until it stops (log out and in). Undo with disable.
                """)

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let file = try SecretServiceCommand.activationFile()
                if let existing = try? String(contentsOfFile: file, encoding: .utf8), !existing.contains(SecretServiceCommand.mark) {
                    throw ServiceError(.alreadyExists, "\(file) exists and is not Touchgate's; nothing was changed "
                                       + "(move it away first if Touchgate should take its place)")
                }
                guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
                    throw ServiceError(.error, "cannot find this program (/proc/self/exe) for D-Bus to start")
                }
                // Where the user's systemd runs the bus, D-Bus asks systemd to start the unit
                // `make install` put there; named only when it is there, or activation would fail.
                let unit = SecretServiceCommand.systemdUnitInstalled ? "SystemdService=touchgate-secret-service.service\n" : ""
                let text = """
                    \(SecretServiceCommand.mark)
                    [D-BUS Service]
                    Name=org.freedesktop.secrets
                    Exec=\(program) secret-service serve
                    \(unit)
                    """
                let directory = PathText.deletingLastComponent(of: file)
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    try Data(text.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
                } catch {
                    throw ServiceError(.error, "cannot write \(file): \(ErrorText.describe(error))")
                }
                let reloaded = SecretServiceCommand.reloadBus()
                console.result("enabled", ActivationReport(file: file, enabled: true, busReloaded: reloaded),
                               text: "Enabled: D-Bus starts Touchgate's Secret Service (\(file)). A provider running "
                                   + "now keeps the name until it stops: log out and in.")
                return ExitStatus.success
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable",
            abstract: "Give the Secret Service back to gnome-keyring or KWallet.",
            discussion: "Removes the D-Bus service file enable wrote; items stay in the vault.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let file = try SecretServiceCommand.activationFile()
                guard let existing = try? String(contentsOfFile: file, encoding: .utf8) else {
                    console.result("disabled", ActivationReport(file: file, enabled: false),
                                   text: "Not enabled: \(file) does not exist.")
                    return ExitStatus.success
                }
                guard existing.contains(SecretServiceCommand.mark) else {
                    throw ServiceError(.forbidden, "\(file) is not Touchgate's; nothing was changed")
                }
                guard unlink(file) == 0 else {
                    throw ServiceError(.error, "cannot remove \(file): \(String(cString: strerror(errno)))")
                }
                let reloaded = SecretServiceCommand.reloadBus()
                console.result("disabled", ActivationReport(file: file, enabled: false, busReloaded: reloaded),
                               text: "Disabled: removed \(file). Touchgate's provider, if running, keeps the name "
                                   + "until it stops (log out and in).")
                return ExitStatus.success
            }
        }
    }
}

/// `{"file": …, "enabled": …}`.
struct ActivationReport: Encodable, Sendable {
    var file: String
    var enabled: Bool
    /// Whether the session bus read its service files again (false: no session bus here).
    var busReloaded = false
}

extension Secret {
    /// `touchgate secret allow ITEM PROGRAM`: a program reads an item without its own touch.
    struct Allow: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "allow",
            abstract: "Let a program read a Secret Service item without a touch of its own.",
            discussion: """
                Through the Secret Service, each program's first read of an item needs a touch that \
                names it, good for the reuse window. This lets PROGRAM (a path, or a name found on \
                PATH; links are resolved, as the kernel reports programs) read ITEM for good, after \
                a touch; --revoke takes it back. The item's own policy still applies.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var readerOptions: ReaderOptions

        @Argument(help: "The item's name.", completion: Completions.secretNames)
        var name: String

        @Argument(help: "The program: an absolute path, or a name on PATH.")
        var program: String

        @Flag(help: "Stop letting the program read the item without a touch.")
        var revoke = false

        func run() async throws {
            let (name, program, revoke) = (name, program, revoke)
            try await CommandRunner.run(json: common.json) { console in
                let executable = try Self.resolve(program)
                let report = try await service.secretAllow(name, executable: executable, revoke: revoke,
                                                           interaction: TerminalInteraction(console: console))
                let shown = StoredText.escaped(report.name)
                console.result("allowed", report,
                               text: report.allowed.isEmpty ? "No program reads '\(shown)' without its own touch."
                                   : "Programs that read '\(shown)' without their own touch:\n"
                                   + report.allowed.map { "  " + StoredText.escaped($0) }.joined(separator: "\n"))
                return ExitStatus.success
            }
        }

        /// The program's real path: as given when absolute, else found on PATH; links resolved.
        static func resolve(_ program: String) throws(ServiceError) -> String {
            var path = program
            if !program.contains("/") {
                let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
                let candidates = directories.map { "\($0)/\(program)" }
                guard let found = candidates.first(where: { candidate in access(candidate, X_OK) == 0 }) else {
                    throw ServiceError(.usage, "no program '\(StoredText.escaped(program))' on PATH; give its absolute path")
                }
                path = found
            }
            guard path.hasPrefix("/"), let real = realpath(path, nil) else {
                throw ServiceError(.usage, "'\(StoredText.escaped(program))' is not a program here; give its absolute path "
                                         + "(command -v NAME prints it)")
            }
            defer { free(real) }
            return String(cString: real)
        }
    }
}
