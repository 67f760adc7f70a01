public import FoundationEssentials

/// What `touchgate audit ship` did for one trail (`--json`: `{"result":"shipped", …}`, a line per trail).
public struct AuditShipReport: Codable, Sendable, Equatable {
    /// The machine name the records were filed under.
    public var machine: String
    /// Whose trail it is (the login name).
    public var user: String
    /// The trail's id, lowercase hex.
    public var trail: String
    /// Records sent in this run (a record sent again after an interruption counts again;
    /// the collector keeps one copy).
    public var shipped: Int
    /// The last sequence the collector now holds, with the seal that vouches for it.
    public var through: Int64
    /// Transactions committed.
    public var batches: Int
    /// The size of the collector's fleet log at the checkpoint this machine now keeps,
    /// having checked that the log only grew and holds this trail's shipments (nil: no
    /// batch was sent and no checkpoint is kept yet).
    public var logSize: Int64?

    /// A report.
    public init(machine: String, user: String, trail: String, shipped: Int, through: Int64, batches: Int,
                logSize: Int64? = nil) {
        self.machine = machine
        self.user = user
        self.trail = trail
        self.shipped = shipped
        self.through = through
        self.batches = batches
        self.logSize = logSize
    }
}

/// What touchgated's `audit.ship` did: one report per trail shipped (the caller's own, or
/// for root every user's).
public struct AuditShipmentsReport: Codable, Sendable, Equatable {
    /// The trails shipped, in the order they went.
    public var shipments: [AuditShipReport]

    /// A report.
    public init(shipments: [AuditShipReport]) {
        self.shipments = shipments
    }
}

/// One trail as `touchgate-collector verify` found it.
public struct FleetTrailReport: Codable, Sendable, Equatable {
    /// What was found.
    public enum Status: String, Codable, Sendable {
        /// Every record is vouched for by a seal the machine's registered key signed.
        case intact
        /// Records after the newest seal: a shipment under way or cut short (checked once
        /// the machine ships again); everything before is intact.
        case unsealed
        /// Edited, inserted, missing or unsigned records: see ``FleetTrailReport/problem``.
        case broken
    }

    /// The machine.
    public var machine: String
    /// The trail's id, lowercase hex.
    public var trail: String
    /// Records checked.
    public var records: Int
    /// The first and last sequence stored (nil: none).
    public var first: Int64?
    public var last: Int64?
    /// The sequence the newest signed seal names (nil: none).
    public var signedThrough: Int64?
    /// The verdict.
    public var status: Status
    /// For `broken` and `unsealed`: what, at which record.
    public var problem: String?
    /// The last record archived (`touchgate-collector archive`): records up to it left the
    /// database and are checked from the archive (`verify --archive`); nil: none.
    public var archivedThrough: Int64?

    /// A report.
    public init(machine: String, trail: String, records: Int, first: Int64?, last: Int64?, signedThrough: Int64?,
                status: Status, problem: String?) {
        self.machine = machine
        self.trail = trail
        self.records = records
        self.first = first
        self.last = last
        self.signedThrough = signedThrough
        self.status = status
        self.problem = problem
    }
}

/// One collected record, as `touchgate-collector query --json` writes it: the keys of
/// `touchgate audit show --json` with the machine and trail.
public struct FleetRecordReport: Codable, Sendable, Equatable {
    public var machine: String
    public var trail: String
    public var seq: Int64
    public var time: Date
    public var unixTime: Double
    public var uid: UInt32
    public var login: String
    public var vaultUser: String?
    public var event: String
    public var item: String?
    public var outcome: String
    public var reason: String

    /// A report.
    public init(machine: String, trail: String, seq: Int64, unixTime: Double, uid: UInt32, login: String,
                vaultUser: String?, event: String, item: String?, outcome: String, reason: String) {
        self.machine = machine
        self.trail = trail
        self.seq = seq
        self.time = Date(timeIntervalSince1970: unixTime)
        self.unixTime = unixTime
        self.uid = uid
        self.login = login
        self.vaultUser = vaultUser
        self.event = event
        self.item = item
        self.outcome = outcome
        self.reason = reason
    }
}

/// The fleet log as `touchgate-collector verify` found it (`--json`: the last line,
/// `{"log": …}`).
public struct FleetLogReport: Codable, Sendable, Equatable {
    /// Entries (shipments and key registrations) in the log.
    public var size: Int64
    /// The recomputed root hash, base64 (as checkpoints spell it).
    public var root: String
    /// Checkpoints stored and checked.
    public var checkpoints: Int
    /// `intact` or `broken`.
    public var status: FleetTrailReport.Status
    /// For `broken`: what.
    public var problem: String?
    /// Whether key registrations were checked against the enrollment key (false: no
    /// `--enrollment-key` was given, and registered keys were taken from the table as they are).
    public var registrationsChecked: Bool
    /// How far each witness given with `--witness-key` vouched: the largest log size it
    /// cosigned (nil: none).
    public var witnesses: [WitnessReport]
    /// Every key registration in the log, in order: a key added or swapped shows here.
    public var registrations: [RegistrationReport]
    /// With a witness quorum (`--witness-quorum N`): N, and the largest size that N of the
    /// witnesses given cosigned (nil: none, and the log is reported broken: a split view
    /// cannot be ruled out).
    public var quorum: Int?
    public var witnessedThrough: Int64?
    /// Checkpoints checked against the log's key (`--log-key`), when it was given.
    public var logSigned: Int?

    /// One key registration entry.
    public struct RegistrationReport: Codable, Sendable, Equatable {
        public var machine: String
        /// The key, lowercase hex.
        public var key: String
        /// Its entry in the log.
        public var entry: Int64
        /// When the enrollment key signed it (as the statement says).
        public var time: Date

        public init(machine: String, key: String, entry: Int64, time: Date) {
            self.machine = machine
            self.key = key
            self.entry = entry
            self.time = time
        }
    }

    /// One witness's cosignatures.
    public struct WitnessReport: Codable, Sendable, Equatable {
        public var name: String
        public var vouchedThrough: Int64?

        public init(name: String, vouchedThrough: Int64?) {
            self.name = name
            self.vouchedThrough = vouchedThrough
        }
    }

    /// A report.
    public init(size: Int64, root: String, checkpoints: Int, status: FleetTrailReport.Status, problem: String?,
                registrationsChecked: Bool, witnesses: [WitnessReport], registrations: [RegistrationReport] = []) {
        self.size = size
        self.root = root
        self.checkpoints = checkpoints
        self.status = status
        self.problem = problem
        self.registrationsChecked = registrationsChecked
        self.witnesses = witnesses
        self.registrations = registrations
    }
}
