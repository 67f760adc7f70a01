import ArgumentParser
import Foundation
import TouchgateService
import TouchgateWire

/// `touchgate prints`: the enrolled prints.
struct Prints: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List or delete enrolled prints.",
        subcommands: [List.self, Delete.self, Clear.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List enrolled prints (never their templates).")

        @OptionGroup var common: CommonOptions
        @Option(help: "Only this user's prints.")
        var user: String?

        func run() async throws {
            let user = self.user
            try await CommandRunner.run(json: common.json) { console in
                let prints = try await service.prints(user: user)
                let text = prints.isEmpty ? "no prints enrolled" : prints.map { print in
                    StoredText.escaped("\(print.user)  \(print.finger)  \(print.driver)/\(print.deviceID)  "
                                       + Self.day(print.enrolled)) + (print.onDevice ? "  (on reader)" : "")
                }.joined(separator: "\n")
                console.result("prints", PrintList(prints: prints), text: text)
                return ExitStatus.success
            }
        }

        static func day(_ date: Date) -> String {
            ISO8601DateFormatter.string(from: date, timeZone: .current, formatOptions: [.withFullDate])
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an enrolled finger (from the reader too, when it stores prints).",
            discussion: """
                Once a vault exists this needs the passphrase (terminal or --passphrase-fd N) and \
                destroys every biometry-current-set secret.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var readerOptions: ReaderOptions
        @OptionGroup var userOption: UserOption
        @OptionGroup var passphrase: PassphraseOptions
        @Option(help: "Which finger.", completion: Completions.fingers)
        var finger: String

        @Flag(help: "Do not ask before destroying the biometry-current-set secrets the deletion invalidates.")
        var yes = false

        func validate() throws {
            guard TouchgateService.fingerName(finger) != nil else { throw ValidationError("unknown finger '\(finger)'") }
        }

        func run() async throws {
            let (finger, user, device, input, yes) = (finger, userOption.user, readerOptions.device, passphrase.input(), yes)
            try await CommandRunner.run(json: common.json) { console in
                let report = try await service.deletePrint(
                    finger: finger, user: user, device: device,
                    interaction: TerminalInteraction(console: console, input: input, assumeYes: yes))
                console.result("deleted", report, text: "Deleted \(report.finger) of \(StoredText.escaped(report.user))."
                               + invalidatedText(report.invalidated))
                return ExitStatus.success
            }
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wipe a reader's own storage and forget every print made on it.",
            discussion: """
                Only for readers that store prints. Needs --yes, and once a vault exists the passphrase \
                (terminal or --passphrase-fd N); destroys every biometry-current-set secret.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var readerOptions: ReaderOptions
        @OptionGroup var passphrase: PassphraseOptions
        @Flag(help: "Confirm: every print on the reader is deleted, for every user.")
        var yes = false

        func validate() throws {
            if !yes { throw ValidationError("this deletes every print on the reader; pass --yes to confirm") }
        }

        func run() async throws {
            let (device, input) = (readerOptions.device, passphrase.input())
            try await CommandRunner.run(json: common.json) { console in
                let report = try await service.clearReader(
                    device: device, interaction: TerminalInteraction(console: console, input: input, assumeYes: true))
                console.result("cleared", report, text: "Cleared \(report.deviceID); forgot \(report.forgotten) stored print(s)."
                               + invalidatedText(report.invalidated))
                return ExitStatus.success
            }
        }
    }
}

/// `{"prints": [...]}`.
struct PrintList: Encodable, Sendable {
    var prints: [PrintReport]
}
