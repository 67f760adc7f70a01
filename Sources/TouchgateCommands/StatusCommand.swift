import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate status`: locked or not, session, lockout, enrolled fingers, readers.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether the vault is locked, whether a touch is needed, lockout, enrolled fingers and readers.",
        discussion: """
            Reads state only: it never asks for a finger or the passphrase, and does not count as \
            use (it does not delay the idle lock).
            """)

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            try await Printed.status(service, console: console)
        }
    }
}
