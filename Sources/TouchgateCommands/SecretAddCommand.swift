import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

extension Secret {
    /// `touchgate secret add NAME --policy P [--fresh]`: stores standard input under NAME.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Store a secret read from standard input.",
            discussion: """
                Policies: biometry-any (any enrolled finger, now or later), biometry-current-set \
                (a finger enrolled now; the item is destroyed when a finger is enrolled or deleted), \
                user-presence (a finger or the passphrase), passphrase; or a combination with & (and) \
                and | (or), e.g. 'biometry-current-set|passphrase'. --fresh demands a new touch every \
                time (no 5-minute reuse). One final newline of the input is dropped. Names are at most \
                256 bytes without control characters. Needs the vault unlocked. A secret of that name is \
                replaced only once confirmed at the terminal or with --replace, and replacing also \
                needs what its current policy asks for (standard input carries the value, so give a \
                passphrase on another descriptor).
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var readerOptions: ReaderOptions
        @OptionGroup var passphrase: PassphraseOptions

        @Argument(help: "The item's name.", completion: Completions.secretNames)
        var name: String

        @Option(help: "Who may read it: biometry-any, biometry-current-set, user-presence, passphrase, or an &/| combination.", completion: Completions.policies)
        var policy: String

        @Flag(help: "Ask for a fresh touch or passphrase on every read (no session reuse).")
        var fresh = false

        @Flag(help: "Replace a secret of that name without asking (it still needs what its policy asks for).")
        var replace = false

        func validate() throws {
            if let problem = StoredText.problem(withName: name, what: "secret") { throw ValidationError(problem) }
        }

        func run() async throws {
            let (name, policy, fresh, replace, device, input) = (name, policy, fresh, replace, readerOptions.device,
                                                                 passphrase.input())
            try await CommandRunner.run(json: common.json) { console in
                // Checked here, before anything is read, so that a typo is reported as every
                // other error is ("touchgate: invalid policy: …", exit 64, and in --json).
                try PolicyText.check(policy)
                let report = try await service.secretAdd(
                    name, value: SecretValue.readStandardInput, policy: policy, fresh: fresh, replace: replace,
                    device: device, interaction: TerminalInteraction(console: console, input: input))
                console.result("stored", report, text: "Stored '\(StoredText.escaped(report.name))' "
                               + "(\(report.policy)\(report.fresh ? ", fresh touch" : "")).")
                return ExitStatus.success
            }
        }
    }
}
