import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
import Glibc

/// The `touchgate` command: fingerprint-gated secrets for Linux.
struct Touchgate: AsyncParsableCommand {
    static let version = Release.version

    static let configuration = CommandConfiguration(
        commandName: "touchgate",
        abstract: "Fingerprint-gated secrets for Linux.",
        discussion: """
            Prompts and progress go to standard error, results to standard output; with --json \
            both are JSON (one object per line on standard error, one result object on standard \
            output). Secrets are read from standard input and passphrases from the terminal or \
            --passphrase-fd N, never from the command line or the environment. Exit codes: 0 success \
            or match, 1 no match, 2 no reader, 3 nothing enrolled, 4 reader disconnected, 5 reader \
            error, 6 damaged or tampered data (the message names the fix, often `touchgate repair`), \
            7 locked out, 8 authentication needed or refused, 9 already exists, 10 not found, \
            11 refused (not confirmed, retention, weak passphrase), 12 audit ship: the collector unreachable and the backlog full, \
            13 no room (disk full, quota), 64 usage, 69 the fleet collector cannot be reached, 75 changed \
            meanwhile: try again, 127 `secret exec` could not start the command, 130 cancelled. See man touchgate \
            and docs/COMMANDS.md, "Exit codes" and "JSON".
            """,
        version: version,
        subcommands: [
            Init.self, Unlock.self, Lock.self, Passphrase.self, Status.self, Secret.self, Audit.self, Policy.self, Repair.self,
            Devices.self, Enroll.self, Verify.self, Identify.self, Prints.self, Capture.self, Import.self, Migrate.self,
            Askpass.self, GitCredentialHelper.self, Pinentry.self, SSH.self, Agent.self, SecretServiceCommand.self, TPM.self,
            Run.self, Approve.self, MCPServe.self, ReceiptCommand.self, PasskeyCommand.self,
        ]
    )
}

/// Where an executable hands its command line to the commands.
public enum CommandLineEntry {
    /// Runs the command line of this process and exits with its status. `host` is what
    /// only an executable linking the service has (nil in `touchgate-client`, whose personal
    /// mode and host-only commands are handed to `touchgate-cli`).
    public static func run(host: (any CommandHost)?) async -> Never {
        ServiceChoice.host = host
        // Installed set-group-ID to touchgate-agent, this program keeps that group only
        // for the agent's doors to touchgated, which it vouches for (AgentGroup).
        AgentGroup.keepOnlyForAgentDoors(Array(CommandLine.arguments.dropFirst()))
        // Before anything else: no core dumps, no ptrace by the same user.
        do {
            if let host { try host.prepare() } else { try ProcessProtection.apply() }
        } catch {
            Console.write("touchgate: \(error.message)\n", to: 2)
            Glibc.exit(error.exitStatus)
        }
        // The personal mode is served in-process: only an executable with a host can.
        if host == nil, Invocation.serviceSocket() == nil { SiblingProgram.fullCLI.exec(CommandLine.arguments) }
        // Everything this process creates is private to its owner.
        umask(0o077)
        do {
            let arguments = Touchgate.helperArguments(Array(CommandLine.arguments.dropFirst()))
            if let suggestion = CommandSuggestion.forUnknownCommand(in: arguments) {
                Console.write("touchgate: \(suggestion)\n", to: 2)
                Glibc.exit(ExitStatus.usage)
            }
            var command = try Touchgate.parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            Touchgate.exit(withError: error)
        }
        Glibc.exit(ExitStatus.success)
    }
}

extension Touchgate {
    /// The command line, for touchgate run under a helper's name (``Invocation/helperPrefix(programName:)``).
    static func helperArguments(_ arguments: [String]) -> [String] {
        (Invocation.helperPrefix(programName: Invocation.programName(CommandLine.arguments.first ?? ""),
                                 arguments: arguments) ?? []) + arguments
    }
}

/// Options every command shares.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Machine-readable output: JSON lines on standard error, one JSON result on standard output.")
    var json = false
}

/// Options of commands that use a reader.
struct ReaderOptions: ParsableArguments {
    @Option(name: .long, help: "The reader to use: a device id or driver name (see `touchgate devices`). Default: the first.")
    var device: String?
}

/// Options naming whose print.
struct UserOption: ParsableArguments {
    @Option(help: "Whose fingers (default: your login name).")
    var user: String?
}

/// The service every command adapts: touchgated when its socket exists (the system
/// mode), else this user's own data in this process (the personal mode).
let service: any TouchgateRequests = ServiceChoice.resolve()
