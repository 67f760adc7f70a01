import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateHelpers
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate askpass`: the program ssh and ssh-add run as `SSH_ASKPASS`.
struct Askpass: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "askpass",
        abstract: "Answer ssh's passphrase and confirmation prompts with a touch (SSH_ASKPASS).",
        discussion: """
            Set SSH_ASKPASS to a script running `touchgate askpass "$@"` (or to touchgate itself \
            through a symlink named touchgate-askpass) and SSH_ASKPASS_REQUIRE=force. A passphrase \
            prompt is answered with the item mapped to it (touchgate askpass map), after what the \
            item's policy asks for; the value goes to standard output only when released. With \
            SSH_ASKPASS_PROMPT=confirm (keys added with ssh-add -c) a touch of any enrolled finger \
            approves the use (exit 0) and nothing is printed. Prompts are mapped in \
            ~/.config/touchgate/helpers.json; every release names ssh-add or ssh-agent in the audit trail.
            """,
        subcommands: [Ask.self, Map.self, Unmap.self, List.self],
        defaultSubcommand: Ask.self)

    /// `touchgate askpass PROMPT`: what ssh runs.
    struct Ask: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ask", abstract: "Answer one prompt (what ssh runs; the default).")

        @Argument(parsing: .captureForPassthrough, help: "The prompt ssh shows.")
        var prompt: [String] = []

        func run() async throws {
            let prompt = self.prompt.joined(separator: " ")
            let kind = ProcessInfo.processInfo.environment["SSH_ASKPASS_PROMPT"] ?? ""
            try await CommandRunner.run(json: false) { console in
                let helpers = HelperRequests.forThisProcess(requester: ProcessTable.describe(helper: "touchgate askpass", pid: getppid()))
                // With no terminal of its own (ssh-agent runs it with none), what it waits for is
                // also told on the terminal of the command that asked: ssh-agent's client's.
                let requester = isatty(STDERR_FILENO) == 1 ? nil : RequesterTerminal.forHelper(runBy: getppid())
                let interaction = RequesterInteraction(base: TerminalInteraction(console: console, assumeYes: true),
                                                       terminal: requester, speaker: "touchgate askpass")
                switch kind {
                case "confirm":
                    // On the requester's terminal, the request to touch the reader names the question.
                    console.event(InteractionEvent(.notice, StoredText.escaped(Askpass.oneLine(prompt))))
                    if isatty(STDERR_FILENO) == 1 {
                        try await helpers.approveKeyUse(prompt, interaction: interaction)
                    } else {
                        // Run by ssh-agent, with no terminal: the person learns of the wait on the
                        // terminal of the command that asked, and from the desktop.
                        try await DesktopNotice.during(summary: "Touch the fingerprint reader to allow this use of an SSH key",
                                                       body: prompt) {
                            try await interaction.tellingOutcome(done: "touched: this use of the key is allowed") {
                                try await helpers.approveKeyUse(prompt, interaction: interaction)
                            }
                        }
                    }
                case "none":
                    // Information only (a security key waits for its own touch): show it, ask nothing.
                    interaction.event(InteractionEvent(.notice, StoredText.escaped(Askpass.oneLine(prompt))))
                default:
                    let value = try await interaction.tellingOutcome(done: "allowed: the key's passphrase was given") {
                        try await helpers.keyPassphrase(prompt: prompt, settings: try HelperSettings.load(),
                                                        interaction: interaction)
                    }
                    try SecretValue.writeLine(value)
                }
                return ExitStatus.success
            }
        }
    }

    /// ssh-agent words its questions on two lines (`Allow use of key …?` and `Key fingerprint
    /// …`): one line, for a terminal and a log.
    static func oneLine(_ prompt: String) -> String {
        prompt.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// `touchgate askpass map PATTERN ITEM`.
    struct Map: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "map",
            abstract: "Answer prompts that mention PATTERN (a key file, a key comment; * ? [] allowed) with ITEM.")

        @Argument(help: "Part of the prompt: the key's file path or comment.")
        var pattern: String

        @Argument(help: "The item holding the key's passphrase.", completion: Completions.secretNames)
        var item: String

        func validate() throws {
            guard !pattern.isEmpty else { throw ValidationError("the pattern must not be empty") }
            if let problem = StoredText.problem(withName: item, what: "secret") { throw ValidationError(problem) }
        }

        func run() async throws {
            let (pattern, item) = (pattern, item)
            try await CommandRunner.run(json: false) { console in
                try HelperSettings.update { $0.mapSSHKey(pattern: pattern, to: item) }
                await HelperMapping.warnIfMissing(item, console: console)
                console.result("mapped", EmptyResult(), text: "ssh prompts mentioning '\(StoredText.escaped(pattern))' "
                               + "are answered with '\(StoredText.escaped(item))'.")
                return ExitStatus.success
            }
        }
    }

    /// `touchgate askpass unmap PATTERN`.
    struct Unmap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unmap", abstract: "Forget the mapping of PATTERN.")

        @Argument(help: "The pattern given to map.")
        var pattern: String

        func run() async throws {
            let pattern = pattern
            try await CommandRunner.run(json: false) { console in
                try HelperSettings.update { settings throws(ServiceError) in try settings.unmapSSHKey(pattern: pattern) }
                return ExitStatus.success
            }
        }
    }

    /// `touchgate askpass list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "Show which prompts map to which items.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let mappings = try HelperSettings.load().askpass
                var table = TextTable("PROMPT PATTERN", "SECRET")
                for mapping in mappings { table.add(StoredText.escaped(mapping.pattern), StoredText.escaped(mapping.item)) }
                console.result("mappings", AskpassMappings(mappings: mappings),
                               text: mappings.isEmpty ? "no prompts mapped; add one: touchgate askpass map PATTERN ITEM"
                                   : table.text)
                return ExitStatus.success
            }
        }
    }

    /// `{"mappings": [{"pattern": …, "item": …}]}`.
    struct AskpassMappings: Encodable {
        let mappings: [HelperSettings.KeyMapping]
    }
}

/// What the mapping commands share.
enum HelperMapping {
    /// Warns when `item` is not (yet) in the vault: the mapping is kept, it just cannot answer yet.
    static func warnIfMissing(_ item: String, console: Console) async {
        guard let items = try? await service.secretList(), !items.contains(where: { $0.name == item }) else { return }
        console.warning("there is no secret named '\(StoredText.escaped(item))' yet; store it with: "
                        + "touchgate secret add '\(StoredText.escaped(item))' --policy biometry-any")
    }
}

/// A result without fields, for `--json`-less commands that still report through the console.
struct EmptyResult: Encodable, Sendable {}
