import FingerprintKit
import Foundation
import TouchgatePolicy
import TouchgateVault
import TouchgateWire

/// One print found in fprintd's store.
public struct ImportedPrint: Codable, Sendable, Equatable {
    /// Which finger (`right-index`, …).
    public var finger: String
    /// The reader's driver.
    public var driver: String
    /// The reader's device id.
    public var deviceID: String
    /// Why it was skipped, when it was.
    public var reason: String?
}

/// What `import fprintd` did (or, with a dry run, would do).
public struct ImportReport: Codable, Sendable, Equatable {
    /// Whose prints.
    public var user: String
    /// fprintd's store that was read.
    public var from: String
    /// Whether nothing was written.
    public var dryRun: Bool
    /// The prints copied into Touchgate's store (or that would be).
    public var imported: [ImportedPrint]
    /// The prints left out, each with its reason.
    public var skipped: [ImportedPrint]
    /// The `biometry-current-set` secrets whose keys the change destroyed.
    public var invalidated: [String]
}

extension TouchgateService {
    /// fprintd's default store (`StateDirectory=fprint` of its unit).
    public static let fprintdStore = "/var/lib/fprint"

    /// Copies the fingers of `user` (default: the principal) that fprintd enrolled into
    /// Touchgate's store, so they need not be enrolled twice.
    ///
    /// fprintd keeps one file per print: `<store>/<user>/<driver>/<device id>/<finger>`, the
    /// finger as libfprint's number in hexadecimal (`7` right index … `a` right little) and
    /// the content `fp_print_serialize` data. Every file is read and checked before anything
    /// is written: a damaged or foreign file refuses the whole import. Prints already in the
    /// store (same user, finger and reader) are skipped. The rest is saved like `enroll`
    /// saves: sealed once a vault exists (which needs the key and the passphrase, and destroys
    /// `biometry-current-set` secrets, listed and confirmed first), with each enrollment
    /// change counted and audited, all in one transaction: all or nothing.
    public func importFromFprintd(user: String? = nil, from directory: String = fprintdStore, dryRun: Bool = false,
                                  interaction: any Interaction) async throws(ServiceError) -> ImportReport {
        try await withStore { store in
            let user = user ?? principal.loginName
            try Self.checkName(user, what: "user")
            let found = try await Self.readFprintdStore(directory, user: user)
            let index = store.printIndex()
            var report = ImportReport(user: user, from: directory, dryRun: dryRun, imported: [], skipped: [], invalidated: [])
            var toSave: [StoredPrint] = []
            for (_, print) in found {
                var entry = ImportedPrint(finger: print.finger.name, driver: print.driver, deviceID: print.deviceID)
                if !(try index.prints(user: user, finger: print.finger.name, driver: print.driver,
                                      deviceID: print.deviceID)).isEmpty {
                    entry.reason = "already enrolled in touchgate"
                    report.skipped.append(entry)
                    continue
                }
                report.imported.append(entry)
                toSave.append(StoredPrint(user: user, finger: print.finger.name, driver: print.driver,
                                          deviceID: print.deviceID, enrolledAt: Self.date(print) ?? Date(),
                                          onDevice: print.isDeviceStored, template: print.serialized))
            }
            guard !dryRun, !toSave.isEmpty else { return report }
            let vault = try store.vaultIfPresent()
            try vault?.requireIntactState()
            let prints = try store.printStore()
            try await vault?.confirmAndAuthorize(.enroll, "Importing \(toSave.count) print\(toSave.count == 1 ? "" : "s") "
                                                 + "from fprintd", interaction)
            report.invalidated = try (vault?.audit ?? store.audit()).atomically { transaction in
                var invalidated: [String] = []
                for stored in toSave {
                    try transaction.save(stored, replace: false, in: prints)
                    invalidated += try EnrollmentTracker.recordChange(.enroll, print: EnrollmentTracker.printID(stored),
                                                                      in: transaction, store: store, context: vault)
                }
                return invalidated
            }
            return report
        }
    }

    /// The enroll date a print carries, at noon local time.
    private static func date(_ print: Print) -> Date? {
        guard var day = print.enrollDate else { return nil }
        day.hour = 12
        return Calendar(identifier: .gregorian).date(from: day)
    }

    /// Reads and checks every print of `user` in fprintd's store at `directory`.
    /// - Throws: a data error naming the file for anything damaged, foreign or unreadable.
    static func readFprintdStore(_ directory: String, user: String) async throws -> [(String, Print)] {
        let base = (directory as NSString).appendingPathComponent(user)
        var found: [(String, Print)] = []
        for driver in try listDirectory(base, store: directory, user: user) {
            let driverPath = (base as NSString).appendingPathComponent(driver)
            for deviceID in try listDirectory(driverPath, store: directory, user: user) {
                let devicePath = (driverPath as NSString).appendingPathComponent(deviceID)
                for name in try listDirectory(devicePath, store: directory, user: user) {
                    let path = (devicePath as NSString).appendingPathComponent(name)
                    found.append((path, try await readPrint(path, name: name, driver: driver, deviceID: deviceID)))
                }
            }
        }
        return found
    }

    private static func readPrint(_ path: String, name: String, driver: String, deviceID: String) async throws -> Print {
        let shown = StoredText.escaped(path)
        let refuse = { (why: String) in
            ServiceError.dataError("fprintd's file \(shown) \(why); nothing was imported. Move it aside (or enroll "
                                   + "that finger again with fprintd-enroll) and import again")
        }
        guard let number = Int32(name, radix: 16), let finger = Finger(rawValue: number), finger != .unknown,
              name == String(number, radix: 16) else {
            throw refuse("is not named like a print (a finger number from 1 to a)")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw unreadable(path, error)
        }
        let print: Print
        do {
            print = try await Print(serialized: [UInt8](data))
        } catch {
            throw refuse("is damaged or not a libfprint print (\(error))")
        }
        guard print.driver == driver, print.deviceID == deviceID else {
            throw refuse("holds a print of another reader (\(print.driver)/\(print.deviceID))")
        }
        guard print.finger == finger else {
            throw refuse("holds \(print.finger.name), not \(finger.name) as its name says")
        }
        return print
    }

    /// The entries of a directory in fprintd's store, sorted; a missing user directory is an
    /// empty store for that user, not an error.
    private static func listDirectory(_ path: String, store: String, user: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if access(path, F_OK) != 0 && errno == EACCES { throw unreadable(path, CocoaError(.fileReadNoPermission)) }
            guard access(store, F_OK) == 0 else {
                throw ServiceError(.notFound, "there is no fprintd store at \(StoredText.escaped(store)); "
                                   + "pass the right one with --from (fprintd's default is \(fprintdStore))")
            }
            if access(store, R_OK | X_OK) != 0 { throw unreadable(store, CocoaError(.fileReadNoPermission)) }
            throw ServiceError(.notFound, "fprintd has no prints of \(StoredText.escaped(user)) in "
                               + "\(StoredText.escaped(store)); enroll with fprintd-enroll, or name the user with --user")
        }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: path).filter { !$0.hasPrefix(".") }.sorted()
        } catch {
            throw unreadable(path, error)
        }
    }

    /// The error for a file or folder of fprintd's store that cannot be read.
    private static func unreadable(_ path: String, _ error: any Error) -> ServiceError {
        let denied = (error as? CocoaError)?.code == .fileReadNoPermission || access(path, R_OK) != 0 && errno == EACCES
        guard denied else {
            return .dataError("cannot read \(StoredText.escaped(path)) (\(error.localizedDescription)); nothing was imported")
        }
        return ServiceError(.error, "cannot read \(StoredText.escaped(path)): permission denied. fprintd's store "
                            + "is readable by root only. Copy your prints to a private folder once, for example: "
                            + "sudo install -d -m 700 -o $USER ~/fprint-copy && sudo cp -r /var/lib/fprint/$USER "
                            + "~/fprint-copy/ && sudo chown -R $USER ~/fprint-copy; then run: touchgate import fprintd "
                            + "--from ~/fprint-copy, and delete ~/fprint-copy afterwards (it holds biometric data)")
    }
}
