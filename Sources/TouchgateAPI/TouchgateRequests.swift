import Foundation

/// Every request a client can make, as a client makes it: served in this process by
/// ``TouchgateService`` (the personal mode), or by `touchgated` through the daemon's
/// socket (`DaemonClient`, the system mode). The CLI holds an `any TouchgateRequests`
/// and never knows which; both give the same reports and the same ``ServiceError``s.
public protocol TouchgateRequests: Sendable {
    /// Which mode serves the requests, and what it protects against.
    var mode: ServiceMode { get }

    func status() async throws(ServiceError) -> StatusReport
    func initialize(stretching: KeyStretching, interaction: any Interaction) async throws(ServiceError) -> InitReport
    /// Unlocks with the passphrase. With `onlyIfDue`, only when the passphrase is due (a
    /// vault that is locked, or whose policy wants the passphrase before a finger is
    /// enough again); otherwise nothing is asked or recorded and the report says so. A PAM
    /// stack's `unlock-with-password` uses that form, so a login password that is not the
    /// passphrase is never tried when nothing needs it.
    func unlock(onlyIfDue: Bool, interaction: any Interaction) async throws(ServiceError) -> UnlockReport
    func lock() async throws(ServiceError) -> LockReport
    func changePassphrase(stretching: KeyStretching?, current: any Interaction,
                          new: any Interaction) async throws(ServiceError)

    func enroll(finger: String, user: String?, replace: Bool, device: String?,
                interaction: any Interaction) async throws(ServiceError) -> EnrollReport
    func printList(user: String?, device: String?, interaction: any Interaction) async throws(ServiceError) -> PrintListReport
    func deleteOrphans(device: String?, interaction: any Interaction) async throws(ServiceError) -> OrphanDeleteReport
    func deletePrint(finger: String, user: String?, device: String?,
                     interaction: any Interaction) async throws(ServiceError) -> DeleteReport
    func clearReader(device: String?, interaction: any Interaction) async throws(ServiceError) -> ClearReport
    func importFromFprintd(user: String?, from directory: String, dryRun: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> ImportReport
    func verify(user: String?, finger: String?, device: String?,
                interaction: any Interaction) async throws(ServiceError) -> MatchReport
    func identify(device: String?, interaction: any Interaction) async throws(ServiceError) -> MatchReport
    func listReaders() async throws(ServiceError) -> ReaderInventory
    func capture(to path: String, format: ImageFormat, device: String?,
                 interaction: any Interaction) async throws(ServiceError) -> CaptureReport

    func settings() async throws(ServiceError) -> SettingsReport
    func changeSettings(_ change: SettingsChange, interaction: any Interaction) async throws(ServiceError) -> SettingsReport
    func repair(interaction: any Interaction) async throws(ServiceError) -> RepairReport

    func release(_ name: String, device: String?, interaction: any Interaction) async throws(ServiceError) -> SecretBytes
    func store(_ name: String, value: @escaping @Sendable () async throws -> SecretBytes, policy: String, fresh: Bool,
               replace: Bool, device: String?, interaction: any Interaction) async throws(ServiceError) -> StoredReport
    func items() async throws(ServiceError) -> [ItemReport]
    func remove(_ name: String, interaction: any Interaction) async throws(ServiceError)

    func auditRecords(_ filter: AuditFilter) async throws(ServiceError) -> [AuditRecordReport]
    func auditRecordCount(_ filter: AuditFilter) async throws(ServiceError) -> Int
    func verifyAudit() async throws(ServiceError) -> Int
    func exportAudit(_ filter: AuditFilter, format: AuditExportFormat,
                     to write: @escaping @Sendable (String) throws -> Void) async throws(ServiceError) -> Int
    func auditPublicKey() async throws(ServiceError) -> String
    func pruneAudit(before cutoff: Date, force: Bool, interaction: any Interaction) async throws(ServiceError) -> Int
}

extension TouchgateRequests {
    /// Unlocks with the passphrase, due or not (`touchgate unlock`).
    public func unlock(interaction: any Interaction) async throws(ServiceError) {
        _ = try await unlock(onlyIfDue: false, interaction: interaction)
    }
}

/// Which process enforces the guarantees.
public enum ServiceMode: String, Codable, Sendable {
    /// This process, as the user it constrains (files in the user's home, key in the
    /// user's kernel keyring).
    case personal
    /// `touchgated`, under its own uid (its own store and memory).
    case system

    /// What the mode protects against, as `status` says it.
    public var trustBoundary: String {
        switch self {
        case .personal:
            "in-process: guards against someone at your unlocked session without your finger and against "
                + "offline theft, not against your own programs (they can read the unlocked key from your keyring "
                + "and roll back your files)"
        case .system:
            "touchgated under its own user: your programs can ask, but cannot read keys, edit or roll back state, "
                + "or forge the audit trail"
        }
    }
}

/// The readers, and when there are none, why.
public struct ReaderInventory: Codable, Sendable, Equatable {
    /// The readers found.
    public var readers: [ReaderReport]
    /// Why none is usable, when none was found.
    public var explanation: String?

    /// A list.
    public init(readers: [ReaderReport], explanation: String?) {
        self.readers = readers
        self.explanation = explanation
    }
}

/// Where `touchgate migrate` moves a personal store: touchgated, reached as a client.
public protocol MigrationTarget: TouchgateRequests {
    /// Hands the personal store's files to the daemon (read-only descriptors: a consistent
    /// copy of the database, then the audit key), which adopts them for the caller's uid
    /// after the passphrase (asked through `interaction`) opens the vault and the audit
    /// chain verifies. `from` is the personal data directory, for the audit record.
    func adopt(database: Int32, auditKey: Int32, from: String,
               interaction: any Interaction) async throws(ServiceError) -> MigrationReport
}
