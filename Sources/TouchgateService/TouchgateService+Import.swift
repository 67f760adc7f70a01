import FingerprintKit
import FoundationEssentials
import Glibc
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
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
    public func importFprintd(user: String? = nil, from directory: String = Vocabulary.fprintdStore, dryRun: Bool = false,
                                  interaction: any Interaction) async throws(ServiceError) -> ImportReport {
        try await withStore { store in
            let user = user ?? principal.loginName
            try Self.checkName(user, what: "user")
            // The user name is a folder of fprintd's store: one folder, never a path out of it.
            guard !user.contains("/"), user != ".", user != ".." else {
                throw ServiceError.usage("'\(StoredText.escaped(user))' is not a user name fprintd keeps prints under; "
                                         + "name the user as fprintd-enroll does (your login name by default)")
            }
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

    /// The enroll date a print carries, at noon local time (the C library's: FoundationEssentials
    /// knows no time zone by name, and its `TimeZone.current` is GMT without ICU).
    private static func date(_ print: Print) -> Date? {
        guard let day = print.enrollDate, let year = day.year, let month = day.month, let dayOfMonth = day.day else {
            return nil
        }
        var noon = tm()
        noon.tm_year = Int32(year - 1900)
        noon.tm_mon = Int32(month - 1)
        noon.tm_mday = Int32(dayOfMonth)
        noon.tm_hour = 12
        noon.tm_isdst = -1
        let seconds = mktime(&noon)
        return seconds == -1 ? nil : Date(timeIntervalSince1970: Double(seconds))
    }

    /// Reads and checks every print of `user` in fprintd's store at `directory`.
    /// - Throws: a data error naming the file for anything damaged, foreign or unreadable.
    static func readFprintdStore(_ directory: String, user: String) async throws -> [(String, Print)] {
        let base = PathText.appending(user, to: directory)
        var found: [(String, Print)] = []
        for driver in try listDirectory(base, store: directory, user: user) {
            let driverPath = PathText.appending(driver, to: base)
            for deviceID in try listDirectory(driverPath, store: directory, user: user) {
                let devicePath = PathText.appending(deviceID, to: driverPath)
                for name in try listDirectory(devicePath, store: directory, user: user) {
                    let path = PathText.appending(name, to: devicePath)
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
        let data = try readRegularFile(path, refuse: refuse)
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

    /// The largest print file read: fprintd's are a few kilobytes (an image reader's print
    /// holds its minutiae, a match-on-chip reader's only the chip's id).
    static let largestPrintFile = 1 << 20

    /// The content of the print file at `path`, read only if it is a regular file of at most
    /// ``largestPrintFile`` bytes. A symbolic link, a FIFO (which would block the read
    /// forever), a device or a huge file is refused: fprintd writes none of these.
    private static func readRegularFile(_ path: String, refuse: (String) -> ServiceError) throws -> Data {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: a link is not followed.
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ELOOP { throw refuse("is a symbolic link (fprintd writes plain files)") }
            throw unreadable(path, POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw unreadable(path, POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw refuse("is not a plain file") }
        guard info.st_size <= largestPrintFile else {
            throw refuse("is \(info.st_size) bytes, far larger than any print")
        }
        var bytes = [UInt8](repeating: 0, count: largestPrintFile + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw unreadable(path, POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
            if got == 0 { break }
            count += got
        }
        guard count <= largestPrintFile else { throw refuse("grew past \(largestPrintFile) bytes while being read") }
        return Data(bytes[..<count])
    }

    /// The entries of a directory in fprintd's store, sorted; a missing user directory is an
    /// empty store for that user, not an error.
    private static func listDirectory(_ path: String, store: String, user: String) throws -> [String] {
        var isDirectory = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if access(path, F_OK) != 0 && errno == EACCES { throw unreadable(path, CocoaError(.fileReadNoPermission)) }
            guard access(store, F_OK) == 0 else {
                throw ServiceError(.notFound, "there is no fprintd store at \(StoredText.escaped(store)); "
                                   + "pass the right one with --from (fprintd's default is \(Vocabulary.fprintdStore))")
            }
            if access(store, R_OK | X_OK) != 0 { throw unreadable(store, CocoaError(.fileReadNoPermission)) }
            throw ServiceError(.notFound, "fprintd has no prints of \(StoredText.escaped(user)) in "
                               + "\(StoredText.escaped(store)); enroll with fprintd-enroll, or name the user with --user")
        }
        var link = stat()
        if path != store, lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
            throw ServiceError.dataError("\(StoredText.escaped(path)) in fprintd's store is a symbolic link (fprintd "
                                         + "writes plain folders); nothing was imported. Copy the store without links "
                                         + "(cp -r) and import from the copy")
        }
        guard isDirectory else {
            throw ServiceError.dataError("\(StoredText.escaped(path)) in fprintd's store is not a folder; nothing was "
                                         + "imported. Move it aside and import again")
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
            return .dataError("cannot read \(StoredText.escaped(path)) (\(ErrorText.describe(error))); nothing was imported")
        }
        return ServiceError(.error, "cannot read \(StoredText.escaped(path)): permission denied. fprintd's store "
                            + "is readable by root only. Copy your prints to a private folder once, for example: "
                            + "sudo install -d -m 700 -o $USER ~/fprint-copy && sudo cp -r /var/lib/fprint/$USER "
                            + "~/fprint-copy/ && sudo chown -R $USER ~/fprint-copy; then run: touchgate import fprintd "
                            + "--from ~/fprint-copy, and delete ~/fprint-copy afterwards (it holds biometric data)")
    }
}
