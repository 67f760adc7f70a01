/// Something a person at the reader or keyboard should know while a request runs: a
/// prompt, progress, a hint. The CLI shows ``message``; `--json` and the daemon protocol
/// send the whole event (one JSON object per line).
public struct InteractionEvent: Codable, Sendable, Equatable {
    /// The kinds of events; raw values are the stable `event` names.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// A touch will be needed: sent before the reader is opened.
        case touchNeeded = "touch-needed"
        /// The reader is waiting for a finger now.
        case fingerNeeded = "finger-needed"
        /// An enrollment began.
        case enrollStart = "enroll-start"
        /// One enrollment scan was accepted.
        case enrollStage = "enroll-stage"
        /// The scan was poor; the reader asks again.
        case retry
        /// The passphrase is about to be asked.
        case passphraseNeeded = "passphrase-needed"
        /// Something the person should know: a warning, a fallback, a retry.
        case notice
        /// The wait for a touch is over, matched or not: a notice asking for one can go.
        case touchEnded = "touch-ended"
    }

    /// What happened.
    public var event: Kind
    /// The same for people, one line.
    public var message: String
    /// For prompts: the operation (`enroll`, `verify`, `identify`, `authorize`, `capture`).
    public var operation: String?
    /// The finger asked for or enrolled, if known.
    public var finger: String?
    /// `press` or `swipe`.
    public var scanType: String?
    /// Enrollment: the scan being asked for (1-based) and how many the reader announced.
    public var stage: Int?
    /// Enrollment: scans in all, as announced.
    public var stages: Int?
    /// Enrollment progress: scans done.
    public var completed: Int?
    /// Enrollment progress: scans in all.
    public var total: Int?
    /// Retry: `general`, `too-short`, `center-finger` or `remove-finger`.
    public var reason: String?
    /// Retry: which scan of the operation comes next (2-based).
    public var attempt: Int?
    /// Enrollment: whose finger.
    public var user: String?
    /// Enrollment: the reader's device id.
    public var deviceID: String?

    /// An event of `kind` saying `message`; set the other fields as they apply.
    public init(_ kind: Kind, _ message: String) {
        event = kind
        self.message = message
    }
}
