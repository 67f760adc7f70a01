import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate import`: brings in prints enrolled elsewhere.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import prints enrolled elsewhere.",
        subcommands: [ImportFprintd.self])
}

/// `touchgate import fprintd`: copies a user's fprintd enrollments into Touchgate's store.
struct ImportFprintd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fprintd",
        abstract: "Copy the fingers enrolled in fprintd into Touchgate's store, so they need not be enrolled twice.",
        discussion: """
            Reads fprintd's store (<dir>/<user>/<driver>/<device id>/<finger>), checks every print, and \
            saves them like `touchgate enroll` does: sealed once a vault exists (which needs the vault \
            unlocked and the passphrase, and destroys every biometry-current-set secret), counted and \
            audited, all or nothing. Fingers already enrolled in Touchgate are skipped. fprintd's store is \
            readable by root only: the error says how to copy it out. The imported prints match on the \
            same reader opened directly (fprintd stopped, or TOUCHGATE_READER_BACKEND=libfprint).
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var userOption: UserOption
    @OptionGroup var passphrase: PassphraseOptions

    @Option(help: "fprintd's store.", completion: .directory)
    var from: String = Vocabulary.fprintdStore

    @Flag(help: "Show what would be imported; change nothing.")
    var dryRun = false

    @Flag(help: "Do not ask before destroying the biometry-current-set secrets the import invalidates.")
    var yes = false

    func run() async throws {
        let (user, from, dryRun, input, yes) = (userOption.user, from, dryRun, passphrase.input(), yes)
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.importFprintd(
                user: user, from: from, dryRun: dryRun,
                interaction: TerminalInteraction(console: console, input: input, assumeYes: yes))
            console.result("imported", report, text: Self.text(report))
            return ExitStatus.success
        }
    }

    static func text(_ report: ImportReport) -> String {
        let who = StoredText.escaped(report.user)
        let names = { (prints: [ImportedPrint]) in
            prints.map { "\($0.finger) (\(StoredText.escaped($0.driver))/\(StoredText.escaped($0.deviceID)))" }
                .joined(separator: ", ")
        }
        var lines: [String] = []
        if report.imported.isEmpty {
            lines.append("Nothing to import for \(who).")
        } else {
            lines.append((report.dryRun ? "Would import" : "Imported") + " for \(who): " + names(report.imported))
        }
        for skipped in report.skipped {
            lines.append("Skipped \(skipped.finger) (\(StoredText.escaped(skipped.driver))/"
                         + "\(StoredText.escaped(skipped.deviceID))): \(skipped.reason ?? "")")
        }
        return lines.joined(separator: "\n") + invalidatedText(report.invalidated)
    }
}
