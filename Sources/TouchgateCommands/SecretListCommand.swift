import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

extension Secret {
    /// `touchgate secret list`: names and policies, never values.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List stored secrets: names and policies, never values.",
            discussion: "Works while the vault is locked. Control characters in names are shown escaped.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                try await Printed.secretList(service, console: console)
            }
        }
    }

    /// `touchgate secret rm NAME`: deletes an item.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Delete a stored secret.",
            discussion: """
                Asks for confirmation at the terminal (--yes to skip it; without a terminal --yes is \
                required). Needs the vault unlocked, not a touch (deleting releases nothing); audited.
                """)

        @OptionGroup var common: CommonOptions

        @Argument(help: "The item's name.", completion: Completions.secretNames)
        var name: String

        @Flag(help: "Delete without asking.")
        var yes = false

        func run() async throws {
            let (name, yes) = (name, yes)
            try await CommandRunner.run(json: common.json) { console in
                try await service.secretRm(name, interaction: TerminalInteraction(console: console, assumeYes: yes))
                console.result("deleted", NameReport(name: name), text: "Deleted '\(StoredText.escaped(name))'.")
                return ExitStatus.success
            }
        }
    }
}

/// `{"name": …}`.
struct NameReport: Encodable, Sendable {
    var name: String
}
