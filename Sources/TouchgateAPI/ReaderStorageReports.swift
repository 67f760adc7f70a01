import FoundationEssentials

/// How a print compares between the store and a reader's own storage.
public enum ReaderState: String, Codable, Sendable, Equatable {
    /// In the store and on the reader.
    case inStep = "in-step"
    /// In the store, but the reader no longer holds it: verify cannot match it.
    case missingOnReader = "missing-on-reader"
    /// On the reader, unknown to the store (another program's print, or one left behind).
    case orphan = "orphan"
}

/// A print held by a reader that the store does not know. Shows only what the reader
/// reports about it, never its template.
public struct ReaderPrintReport: Codable, Sendable, Equatable {
    /// The reader's driver.
    public var driver: String
    /// The reader's device id.
    public var deviceID: String
    /// The finger the reader reports (`right-index`, …), when it reports one.
    public var finger: String?
    /// The user name kept with the print on the reader, when there is one.
    public var chipUser: String?
    /// The enrollment day kept with the print, `YYYY-MM-DD`, when there is one.
    public var enrolled: String?
    /// Whether Touchgate wrote it (its user name starts with `touchgate-`); a print left
    /// by an interrupted enrollment is removed on its own, others only on request.
    public var touchgate: Bool
    /// Always ``ReaderState/orphan``.
    public var readerState: ReaderState

    /// A report.
    public init(driver: String, deviceID: String, finger: String?, chipUser: String?, enrolled: String?,
                touchgate: Bool) {
        self.driver = driver
        self.deviceID = deviceID
        self.finger = finger
        self.chipUser = chipUser
        self.enrolled = enrolled
        self.touchgate = touchgate
        self.readerState = .orphan
    }

    /// One line for people: finger, user name and day as the reader keeps them.
    public var summary: String {
        [finger ?? "unknown finger", chipUser.map { "user \($0)" } ?? "no user name", enrolled]
            .compactMap { $0 }.joined(separator: ", ")
    }
}

/// A connected reader with its own storage, as `prints list` checked it.
public struct ReaderStorageReport: Codable, Sendable, Equatable {
    /// The reader's device id.
    public var deviceID: String
    /// The reader's driver.
    public var driver: String
    /// Whether its storage was listed and compared with the store.
    public var compared: Bool
    /// How many prints it holds, when listed.
    public var held: Int?
    /// Why it was not compared (busy, cannot list), or how it was compared; for people.
    public var note: String?

    /// A report.
    public init(deviceID: String, driver: String, compared: Bool, held: Int? = nil, note: String? = nil) {
        self.deviceID = deviceID
        self.driver = driver
        self.compared = compared
        self.held = held
        self.note = note
    }
}

/// What `prints list` shows: the store's prints, and for readers with their own storage,
/// what they hold beside it.
public struct PrintListReport: Codable, Sendable, Equatable {
    /// The stored prints (never templates), each with its reader state when compared.
    public var prints: [PrintReport]
    /// Prints on readers that the store does not know.
    public var orphans: [ReaderPrintReport]
    /// The connected readers with storage and whether they were compared.
    public var readers: [ReaderStorageReport]

    /// A report.
    public init(prints: [PrintReport], orphans: [ReaderPrintReport] = [], readers: [ReaderStorageReport] = []) {
        self.prints = prints
        self.orphans = orphans
        self.readers = readers
    }
}

/// What `prints delete --orphans` did.
public struct OrphanDeleteReport: Codable, Sendable, Equatable {
    /// The reader's device id.
    public var deviceID: String
    /// The reader's driver.
    public var driver: String
    /// The prints removed from the reader.
    public var deleted: [ReaderPrintReport]
    /// How many prints the reader holds afterwards, when it can list them.
    public var remaining: Int?

    /// A report.
    public init(deviceID: String, driver: String, deleted: [ReaderPrintReport], remaining: Int?) {
        self.deviceID = deviceID
        self.driver = driver
        self.deleted = deleted
        self.remaining = remaining
    }
}
