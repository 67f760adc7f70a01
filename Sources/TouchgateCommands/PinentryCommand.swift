import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateHelpers
import TouchgateTerminal
import Glibc

/// `touchgate pinentry` (and `pinentry-touchgate`, a symlink): gpg-agent's pinentry.
struct Pinentry: AsyncParsableCommand {
    // Computed: the discussion names pinentry-touchgate where this installation has it.
    static var configuration: CommandConfiguration { CommandConfiguration(
        commandName: "pinentry",
        abstract: "A pinentry for gpg-agent: gpg key passphrases released with a touch.",
        discussion: """
            Put `pinentry-program \(SiblingProgram.helperPath("pinentry-touchgate"))` (a symlink to touchgate) in \
            ~/.gnupg/gpg-agent.conf. A key whose keygrip is mapped (touchgate pinentry map; see \
            gpg --list-secret-keys --with-keygrip) gets its passphrase from the vault after what \
            the item's policy asks for; everything else goes to the fallback pinentry \
            (touchgate pinentry fallback). Mappings live in ~/.config/touchgate/helpers.json; \
            every release names gpg-agent in the audit trail.
            """,
        subcommands: [Serve.self, Map.self, Unmap.self, Fallback.self, List.self],
        defaultSubcommand: Serve.self) }

    /// Speaks Assuan on standard input and output (what gpg-agent runs).
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve", abstract: "Serve gpg-agent on standard input and output (the default).")

        @Argument(parsing: .allUnrecognized, help: "Pinentry options gpg-agent passes (--display …); ignored.")
        var ignored: [String] = []

        func run() async throws {
            try await CommandRunner.run(json: false) { console in
                let settings = try HelperSettings.load()
                let helpers = HelperRequests.forThisProcess(requester: ProcessTable.describe(helper: "pinentry-touchgate", pid: getppid()))
                try await PinentryServer(settings: settings, helpers: helpers, console: console).serve()
                return ExitStatus.success
            }
        }
    }

    /// `touchgate pinentry map KEYGRIP ITEM`.
    struct Map: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "map", abstract: "Answer the passphrase of the key KEYGRIP with ITEM.")

        @Argument(help: "The key's keygrip (40 hex digits; gpg --list-secret-keys --with-keygrip).")
        var keygrip: String

        @Argument(help: "The item holding the key's passphrase.", completion: Completions.secretNames)
        var item: String

        func validate() throws {
            guard HelperSettings.canonicalKeygrip(keygrip) != nil else {
                throw ValidationError("'\(keygrip)' is not a keygrip (40 hex digits); see gpg --list-secret-keys --with-keygrip")
            }
            if let problem = StoredText.problem(withName: item, what: "secret") { throw ValidationError(problem) }
        }

        func run() async throws {
            let (keygrip, item) = (keygrip, item)
            try await CommandRunner.run(json: false) { console in
                let grip = try HelperSettings.update { settings throws(ServiceError) in
                    try settings.mapGPGKey(keygrip, to: item)
                }
                await HelperMapping.warnIfMissing(item, console: console)
                console.result("mapped", EmptyResult(), text: "The passphrase of key \(grip) comes from '\(StoredText.escaped(item))'.")
                return ExitStatus.success
            }
        }
    }

    /// `touchgate pinentry unmap KEYGRIP`.
    struct Unmap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unmap", abstract: "Forget the mapping of KEYGRIP.")

        @Argument(help: "The keygrip given to map.")
        var keygrip: String

        func run() async throws {
            let keygrip = keygrip
            try await CommandRunner.run(json: false) { _ in
                try HelperSettings.update { settings throws(ServiceError) in try settings.unmapGPGKey(keygrip) }
                return ExitStatus.success
            }
        }
    }

    /// `touchgate pinentry fallback PROGRAM|--none`.
    struct Fallback: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fallback",
            abstract: "Show or set the pinentry that asks for what the vault does not hold (e.g. /usr/bin/pinentry-tty).",
            discussion: "Without PROGRAM or --none, shows the one set.")

        @OptionGroup var common: CommonOptions

        @Argument(help: "The absolute path of a pinentry program.")
        var program: String?

        @Flag(help: "Have no fallback: unmapped keys are refused.")
        var none = false

        func validate() throws {
            guard !(none && program != nil) else { throw ValidationError("give a PROGRAM or --none, not both") }
            if let program {
                guard program.hasPrefix("/"), FileManager.default.isExecutableFile(atPath: program) else {
                    throw ValidationError("'\(program)' is not an executable given by its absolute path "
                                          + "(install one: apt-get install pinentry-tty)")
                }
            }
        }

        func run() async throws {
            let (program, changing) = (program, program != nil || none)
            try await CommandRunner.run(json: common.json) { console in
                if changing { try HelperSettings.update { $0.pinentryFallback = program } }
                let fallback = try HelperSettings.load().pinentryFallback
                console.result("pinentry", FallbackReport(fallback: fallback),
                               text: "fallback: " + (fallback.map(StoredText.escaped)
                                   ?? "none (keys with no mapping are refused; set one: touchgate pinentry fallback /usr/bin/pinentry-tty)"))
                return ExitStatus.success
            }
        }
    }

    /// `{"fallback": …}` (null: none).
    struct FallbackReport: Encodable {
        let fallback: String?
    }

    /// `touchgate pinentry list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "Show the keygrip mappings and the fallback.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let settings = try HelperSettings.load()
                let keys = settings.pinentryKeys.sorted(by: { $0.key < $1.key })
                var table = TextTable("KEYGRIP", "SECRET")
                for (grip, item) in keys { table.add(StoredText.escaped(grip), StoredText.escaped(item)) }
                let mapped = keys.isEmpty ? "no keys mapped; add one: touchgate pinentry map KEYGRIP ITEM" : table.text
                console.result("pinentry", PinentryMappings(keys: keys.map { PinentryMappings.Key(keygrip: $0.key, item: $0.value) },
                                                            fallback: settings.pinentryFallback),
                               text: mapped + "\nfallback: \(settings.pinentryFallback.map(StoredText.escaped) ?? "none")")
                return ExitStatus.success
            }
        }
    }

    /// `{"keys": [{"keygrip": …, "item": …}], "fallback": …}`.
    struct PinentryMappings: Encodable {
        struct Key: Encodable {
            let keygrip: String
            let item: String
        }
        let keys: [Key]
        let fallback: String?
    }
}
