import ArgumentParser
import FingerprintKit
import Foundation
import TouchgatePolicy
import TouchgateVault

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
                let prints = try Storage.printIndex(database: Storage.database()).prints(user: user)
                let text = prints.isEmpty ? "no prints enrolled" : prints.map {
                    "\($0.user)  \($0.finger)  \($0.driver)/\($0.deviceID)  \(Self.day($0.enrolledAt))\($0.onDevice ? "  (on reader)" : "")"
                }.joined(separator: "\n")
                console.result([("prints", .array(prints.map { print in
                    .object([("user", .string(print.user)), ("finger", .string(print.finger)),
                             ("driver", .string(print.driver)), ("device-id", .string(print.deviceID)),
                             ("enrolled", .string(ISO8601DateFormatter().string(from: print.enrolledAt))),
                             ("on-device", .bool(print.onDevice))])
                }))], text: text)
                return Exit.success
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
        @Option(help: "Which finger.")
        var finger: String

        func validate() throws {
            guard Finger(name: finger) != nil else { throw ValidationError("unknown finger '\(finger)'") }
        }

        func run() async throws {
            let finger = Finger(name: self.finger)!.name
            let user = userOption.resolved
            let device = readerOptions.device
            let input = passphrase.input()
            try await CommandRunner.run(json: common.json) { console in
                let database = try Storage.database()
                let index = Storage.printIndex(database: database)
                var matches = try index.prints(user: user, finger: finger)
                if let device { matches = matches.filter { $0.deviceID == device || $0.driver == device } }
                guard !matches.isEmpty else {
                    throw Failure.nothingEnrolled("\(finger) of \(user) is not enrolled; see: touchgate prints list")
                }
                let vault = try await VaultContext.authorizingEnrollmentChange(.delete, database: database, input: input)
                let store = matches.contains(where: \.onDevice) ? try Storage.printStore(database: database) : index
                // Templates are needed only to delete a print from the reader's own storage.
                matches = try store.prints(user: user, finger: finger).filter { candidate in
                    matches.contains { $0.driver == candidate.driver && $0.deviceID == candidate.deviceID }
                }
                for stored in matches where stored.onDevice {
                    // The reader's copy goes first, so a failure leaves both in place.
                    try await ReaderSession.with(device: stored.deviceID, console: console) { session in
                        try await session.reader.deletePrint(try await Print(serialized: stored.template))
                    }
                }
                for stored in matches {
                    try store.delete(user: stored.user, finger: stored.finger, driver: stored.driver, deviceID: stored.deviceID)
                    try EnrollmentTracker.recordChange(.delete, print: EnrollmentTracker.printID(stored),
                                                       database: database, context: vault)
                }
                console.result([("result", "deleted"), ("user", .string(user)), ("finger", .string(finger)),
                                ("count", .int(matches.count))],
                               text: "Deleted \(finger) of \(user).")
                return Exit.success
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
            let device = readerOptions.device
            let input = passphrase.input()
            try await CommandRunner.run(json: common.json) { console in
                let database = try Storage.database()
                let store = Storage.printIndex(database: database)
                let vault = try await VaultContext.authorizingEnrollmentChange(.delete, database: database, input: input)
                let info = try await ReaderSession.with(device: device, console: console) { session in
                    try await session.reader.clearStorage()
                    return session.info
                }
                let count = try store.deleteAll(driver: info.driver, deviceID: info.deviceID)
                if count > 0 {
                    try EnrollmentTracker.recordChange(.delete, print: EnrolledPrintID("*@\(info.driver):\(info.deviceID)"),
                                                       database: database, context: vault)
                }
                console.result([("result", "cleared"), ("device-id", .string(info.deviceID)), ("forgotten", .int(count))],
                               text: "Cleared \(info.name); forgot \(count) stored print(s).")
                return Exit.success
            }
        }
    }
}
