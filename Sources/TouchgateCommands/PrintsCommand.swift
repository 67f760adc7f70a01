import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
import Glibc

/// `touchgate prints`: the enrolled prints.
struct Prints: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prints",
        abstract: "List or delete enrolled prints.",
        subcommands: [List.self, Delete.self, Clear.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List enrolled prints (never their templates), and what readers with their own storage hold.",
            discussion: """
                A connected reader that keeps prints on itself is asked what it holds: each stored print \
                is shown in step with it or missing on it, and each print on the reader that the store \
                does not know as an orphan (touchgate prints delete --orphans removes those). Needs \
                neither the passphrase nor the unlocked vault.
                """)

        @OptionGroup var common: CommonOptions
        @Option(help: "Only this user's prints.")
        var user: String?
        @Option(name: .long, help: "Only ask this reader (a device id or driver name); the store is listed all the same.")
        var device: String?

        func run() async throws {
            let (user, device) = (user, device)
            try await CommandRunner.run(json: common.json) { console in
                let list = try await service.printsList(user: user, device: device,
                                                       interaction: TerminalInteraction(console: console))
                console.result("prints", list, text: Self.text(list))
                return ExitStatus.success
            }
        }

        static func text(_ list: PrintListReport) -> String {
            var table = TextTable("USER", "FINGER", "READER", "ENROLLED", "STATE")
            for print in list.prints {
                let state = [print.onDevice ? "stored on the reader" : nil, print.readerState.map(describe)]
                table.add(StoredText.escaped(print.user), print.finger, StoredText.escaped("\(print.driver)/\(print.deviceID)"),
                          day(print.enrolled), state.compactMap { $0 }.joined(separator: "; "))
            }
            for orphan in list.orphans {
                table.add("?", StoredText.escaped(orphan.summary), StoredText.escaped("\(orphan.driver)/\(orphan.deviceID)"), "",
                          describe(.orphan))
            }
            var lines: [String] = []
            if list.prints.isEmpty { lines.append("no prints enrolled") }
            if !table.isEmpty { lines.append(table.text) }
            for reader in list.readers {
                if !reader.compared || reader.note != nil {
                    lines.append(StoredText.escaped("note: \(reader.driver)/\(reader.deviceID): "
                                                    + (reader.compared ? "" : "not compared: ") + (reader.note ?? "")))
                }
            }
            return lines.joined(separator: "\n")
        }

        static func describe(_ state: ReaderState) -> String {
            switch state {
            case .inStep: return "in step"
            case .missingOnReader: return "only in store (missing on reader)"
            case .orphan: return "only on reader (orphan)"
            }
        }

        /// The local day of `date`, `2026-11-21`: from the C library, as ``ShownTime`` (FoundationEssentials
        /// knows no time zone by name, and its `TimeZone.current` is GMT without ICU).
        static func day(_ date: Date) -> String {
            var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
            var parts = tm()
            guard localtime_r(&seconds, &parts) != nil else { return String(date.formatted(.iso8601).prefix(10)) }
            return "\((Int(parts.tm_year) + 1900).zeroPadded(4))-\((parts.tm_mon + 1).zeroPadded(2))-\(parts.tm_mday.zeroPadded(2))"
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete an enrolled finger (from the reader too, when it stores prints), or the prints a reader "
                + "holds that the store does not know.",
            discussion: """
                --finger NAME: once a vault exists this needs the passphrase (terminal or --passphrase-fd N) \
                and destroys every biometry-current-set secret.
                --orphans: deletes, one by one, every print on the reader (--device, default the first) that \
                the store does not know, after listing them for confirmation (--yes); needs the passphrase \
                once a vault exists; destroys no secret.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var readerOptions: ReaderOptions
        @OptionGroup var userOption: UserOption
        @OptionGroup var passphrase: PassphraseOptions
        @Option(help: "Which finger.", completion: Completions.fingers)
        var finger: String?

        @Flag(help: "Delete the prints on the reader that the store does not know (see touchgate prints list).")
        var orphans = false

        @Flag(help: "Do not ask before destroying the biometry-current-set secrets, or before deleting orphans.")
        var yes = false

        func validate() throws {
            if orphans {
                guard finger == nil, userOption.user == nil else {
                    throw ValidationError("--orphans deletes prints the store does not know; it takes no --finger or --user")
                }
                return
            }
            guard let finger else { throw ValidationError("name the finger to delete (--finger NAME), or pass --orphans") }
            guard Vocabulary.finger(finger) != nil else { throw ValidationError("unknown finger '\(finger)'") }
        }

        func run() async throws {
            let (user, device, input, yes) = (userOption.user, readerOptions.device, passphrase.input(), yes)
            if orphans {
                try await CommandRunner.run(json: common.json) { console in
                    let report = try await service.printsDeleteOrphans(
                        device: device, interaction: TerminalInteraction(console: console, input: input, assumeYes: yes))
                    let text = report.deleted.isEmpty
                        ? "No orphans on \(report.driver)/\(report.deviceID); nothing was deleted."
                        : "Deleted \(report.deleted.count) orphan print(s) from \(report.driver)/\(report.deviceID):\n"
                            + report.deleted.map { "  " + StoredText.escaped($0.summary) }.joined(separator: "\n")
                    console.result("deleted", report, text: text)
                    return ExitStatus.success
                }
                return
            }
            let finger = finger ?? ""
            try await CommandRunner.run(json: common.json) { console in
                let report = try await service.printsDelete(
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
            commandName: "clear",
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
                let report = try await service.printsClear(
                    device: device, interaction: TerminalInteraction(console: console, input: input, assumeYes: true))
                console.result("cleared", report, text: "Cleared \(report.deviceID); forgot \(report.forgotten) stored print(s)."
                               + invalidatedText(report.invalidated))
                return ExitStatus.success
            }
        }
    }
}

