import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

extension Secret {
    /// `touchgate secret get NAME`: the value alone on standard output.
    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Release a secret to standard output.",
            discussion: """
                Asks for a touch (or the passphrase) as the item's policy requires, unless a touch \
                or passphrase entry within the reuse window can be reused (touchgate policy show). \
                Standard output holds the value and nothing else; with --json, one JSON object whose \
                "value" holds it ("encoding": "base64" when it is not UTF-8 text). Exit status 1 no match, 7 locked out, 8 vault locked, \
                passphrase needed or item invalidated.
                """)

        @OptionGroup var options: ReleaseOptions

        func run() async throws {
            let name = options.name
            let device = options.readerOptions.device
            let input = options.passphrase.input()
            try await CommandRunner.run(json: options.common.json) { console in
                try await Printed.secretGet(service, name: name, device: device, input: input, console: console)
            }
        }
    }

    /// `touchgate secret exec NAME --env VAR -- COMMAND ARGS...`: runs a command with the
    /// value in one environment variable.
    struct Exec: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run a command with a secret in its environment.",
            discussion: """
                After the release is authorized and audited, touchgate sets VAR and replaces itself \
                with COMMAND (execvp): the value is in that process's environment only, never on a \
                command line or in a file. Exit statuses as for get; 127 when COMMAND cannot be run; \
                otherwise COMMAND's own.
                """)

        @OptionGroup var options: ReleaseOptions

        @Option(name: .customLong("env"), help: ArgumentHelp("The environment variable to set.", valueName: "VAR"))
        var variable: String

        @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
        var command: [String] = []

        func validate() throws {
            guard !command.isEmpty else { throw ValidationError("give the command to run after --") }
            guard SecretBinding.isVariableName(variable) else {
                throw ValidationError("'\(variable)' is not a valid environment variable name")
            }
        }

        func run() async throws {
            let name = options.name
            let device = options.readerOptions.device
            let input = options.passphrase.input()
            let variable = self.variable
            let command = self.command
            try await CommandRunner.run(json: options.common.json) { console in
                let value = try await service.secretGet(name, device: device,
                                                      interaction: TerminalInteraction(console: console, input: input))
                try ChildProcess.exec(command, setting: variable, to: value)
            }
        }
    }
}

/// Replacing this process with another one that receives a secret in its environment.
enum ChildProcess {
    /// Sets `variable` to `value` and execs `command`; returns only by throwing.
    static func exec(_ command: [String], setting variable: String, to value: SecretBytes) throws -> Never {
        try SecretValue.withCString(value) { pointer in
            guard setenv(variable, pointer, 1) == 0 else {
                throw ServiceError(.execFailed, "cannot set \(variable): \(String(cString: strerror(errno)))")
            }
        }
        var arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) }
        arguments.append(nil)
        execvp(command[0], &arguments)
        let code = errno
        unsetenv(variable)
        throw ServiceError(.execFailed, "cannot run \(command[0]): \(String(cString: strerror(code)))")
    }
}
