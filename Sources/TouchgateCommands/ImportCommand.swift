import FoundationEssentials
import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate import`: brings in prints enrolled elsewhere.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import prints enrolled elsewhere, or the secrets of another keyring.",
        subcommands: [ImportFprintd.self, ImportSecretService.self])
}

/// `touchgate import secret-service`: copies the items of the running Secret Service
/// provider (gnome-keyring, KWallet) into the vault.
struct ImportSecretService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret-service",
        abstract: "Copy the items of the desktop's keyring (gnome-keyring, KWallet) into the vault.",
        discussion: """
            Reads every item of the Secret Service provider on the session bus, which must be \
            unlocked, and stores them in the vault as Secret Service items (label, attributes and \
            collection kept; policy biometry-any), after one touch, all or nothing, audited. Items \
            the vault already holds (same collection and attributes) are skipped, so it can run again. \
            Run it before touchgate secret-service enable, while the old provider still serves.
            """)

    @OptionGroup var common: CommonOptions

    @Option(help: ArgumentHelp("The bus to read (default: DBUS_SESSION_BUS_ADDRESS).", valueName: "ADDRESS"))
    var address: String?

    @Flag(help: "Show what would be imported (labels only); change nothing.")
    var dryRun = false

    func run() async throws {
        let (given, dryRun) = (address, dryRun)
        try await CommandRunner.run(json: common.json) { console in
            guard let address = given ?? ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
                throw ServiceError(.usage, "no session bus: DBUS_SESSION_BUS_ADDRESS is not set (pass --address)")
            }
            let host = ServiceChoice.requiredHost
            let (details, values) = try host.readSecretService(address: address, values: !dryRun)
            if dryRun {
                let labels = details.map { StoredText.escaped($0.label) }
                console.result("would-import", SecretServiceImportReport(imported: details.map(\.label), skipped: []),
                               text: labels.isEmpty ? "The keyring holds no items." : "Would import \(labels.count) item"
                                   + (labels.count == 1 ? "" : "s") + ":\n" + labels.map { "  " + $0 }.joined(separator: "\n"))
                return ExitStatus.success
            }
            let report = try await service.importSecretService(details, values: { values },
                                                               interaction: TerminalInteraction(console: console))
            var lines = ["Imported \(report.imported.count) item\(report.imported.count == 1 ? "" : "s")"
                         + (report.imported.isEmpty ? "." : ":")]
            lines += report.imported.map { "  " + StoredText.escaped($0) }
            if !report.skipped.isEmpty {
                lines.append("Skipped \(report.skipped.count) the vault already holds: "
                             + report.skipped.map { StoredText.escaped($0) }.joined(separator: ", "))
            }
            console.result("imported", report, text: lines.joined(separator: "\n"))
            return ExitStatus.success
        }
    }
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
