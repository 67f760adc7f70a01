import ArgumentParser
import FingerprintKit
import Foundation
import TouchgatePolicy
import TouchgateVault

/// `touchgate enroll`: scans a finger several times and stores the print.
struct Enroll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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

    @Option(help: "Which finger: left-thumb … left-little, right-thumb … right-little.")
    var finger: String = "right-index"

    @Flag(help: "Enroll again a finger that is already enrolled, replacing its print.")
    var replace = false

    func validate() throws {
        guard let finger = Finger(name: finger), finger != .unknown else {
            throw ValidationError("unknown finger '\(finger)'; use one of: "
                                  + Finger.allCases.dropFirst().map(\.name).joined(separator: ", "))
        }
    }

    func run() async throws {
        let finger = Finger(name: self.finger)!
        let user = userOption.resolved
        let replace = self.replace
        let device = readerOptions.device
        let input = passphrase.input()
        try await CommandRunner.run(json: common.json) { console in
            let database = try Storage.database()
            let store = try Storage.printStore(database: database)
            let vault = try await VaultContext.authorizingEnrollmentChange(.enroll, database: database, input: input)
            let (print, info) = try await ReaderSession.with(device: device, console: console) { session in
                try await enroll(session: session, store: store, finger: finger, user: user, replace: replace)
            }
            let stored = StoredPrint(user: user, finger: finger.name, driver: info.driver, deviceID: info.deviceID,
                                     enrolledAt: Date(), onDevice: print.isDeviceStored, template: print.serialized)
            try store.save(stored, replace: replace)
            try EnrollmentTracker.recordChange(.enroll, print: EnrollmentTracker.printID(stored), database: database,
                                               context: vault)
            console.result([("result", "enrolled"), ("user", .string(user)), ("finger", .string(finger.name)),
                            ("driver", .string(info.driver)), ("device-id", .string(info.deviceID))],
                           text: "Enrolled \(finger.name) of \(user).")
            return Exit.success
        }
    }

    private func enroll(session: ReaderSession, store: PrintStore, finger: Finger, user: String,
                    replace: Bool) async throws -> (Print, ReaderInfo) {
        let console = session.console
        let info = session.info
        let existing = try store.prints(user: user, finger: finger.name, driver: info.driver, deviceID: info.deviceID)
        if !existing.isEmpty && !replace {
            throw StoreError.alreadyEnrolled(user: user, finger: finger.name)
        }
        console.event("enroll-start", [("user", .string(user)), ("finger", .string(finger.name)),
                                       ("device-id", .string(info.deviceID)), ("stages", .int(info.enrollStages))],
                      text: "Enrolling \(finger.name) of \(user) on \(info.name): \(info.enrollStages) scans.")
        // A print on the reader's own storage is replaced there too.
        for old in existing where old.onDevice {
            if let print = try? await Print(serialized: old.template) { try? await session.reader.deletePrint(print) }
        }
        let print: Print
        do {
            print = try await session.prompting("enroll", finger: finger.name) { events in
                try await session.reader.enroll(finger: finger, username: user, events: events)
            }
        } catch DeviceErrorCode.dataDuplicate {
            throw Failure(code: "already-enrolled",
                          message: "the reader says this finger is already enrolled on it (perhaps under another "
                              + "user or finger name); delete that print first (touchgate prints list)",
                          status: Exit.alreadyEnrolled)
        }
        return (print, info)
    }
}
