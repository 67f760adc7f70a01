import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate enroll`: scans a finger several times and stores the print.
struct Enroll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll",
        abstract: "Enroll a finger.",
        discussion: """
            The reader asks for several scans (see `touchgate devices`). A finger that is already \
            enrolled for this user on this reader is refused unless --replace is given; readers \
            that check for duplicates also refuse a finger enrolled under another name. Once a vault \
            exists, enrolling needs the vault unlocked and the passphrase (terminal or --passphrase-fd N), \
            and destroys every biometry-current-set secret.
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var readerOptions: ReaderOptions
    @OptionGroup var userOption: UserOption
    @OptionGroup var passphrase: PassphraseOptions

    @Option(help: "Which finger: left-thumb … left-little, right-thumb … right-little.", completion: Completions.fingers)
    var finger: String = "right-index"

    @Flag(help: "Enroll again a finger that is already enrolled, replacing its print.")
    var replace = false

    @Flag(help: "Do not ask before destroying the biometry-current-set secrets an enrollment invalidates.")
    var yes = false

    func validate() throws {
        guard Vocabulary.finger(finger) != nil else {
            throw ValidationError("unknown finger '\(finger)'; use one of: "
                                  + Vocabulary.fingers.joined(separator: ", "))
        }
    }

    func run() async throws {
        let (finger, user, replace, device, input, yes) = (finger, userOption.user, replace, readerOptions.device,
                                                            passphrase.input(), yes)
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.enroll(
                finger: finger, user: user, replace: replace, device: device,
                interaction: TerminalInteraction(console: console, input: input, assumeYes: yes))
            console.result("enrolled", report, text: "Enrolled \(report.finger) of \(StoredText.escaped(report.user))."
                           + invalidatedText(report.invalidated))
            return ExitStatus.success
        }
    }
}

/// What an enrollment change destroyed, for people: empty when nothing was.
func invalidatedText(_ names: [String]) -> String {
    guard !names.isEmpty else { return "" }
    return "\nDestroyed (bound to the old set of fingers; store them again): "
        + names.map(StoredText.escaped).joined(separator: ", ")
}
