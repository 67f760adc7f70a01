public import Foundation
public import TouchgateAPI

/// Each request as its protocol operation: arguments out, the report back.
extension DaemonClient {
    private func arguments(_ build: (inout RequestArguments) -> Void) -> RequestArguments {
        var arguments = RequestArguments()
        build(&arguments)
        return arguments
    }

    private func asking(_ interaction: any Interaction) -> Parties {
        Parties(interaction: interaction)
    }

    public func status() async throws(ServiceError) -> StatusReport {
        try await call(.status).0
    }

    public func initialize(stretching: KeyStretching, interaction: any Interaction) async throws(ServiceError) -> InitReport {
        try await call(.initialize, arguments { $0.stretching = stretching.rawValue; $0.canAskAgain = interaction.canAskAgain },
                       asking(interaction)).0
    }

    public func unlock(onlyIfDue: Bool, interaction: any Interaction) async throws(ServiceError) -> UnlockReport {
        try await call(.unlock, arguments { $0.canAskAgain = interaction.canAskAgain; $0.onlyIfDue = onlyIfDue ? true : nil },
                       asking(interaction)).0
    }

    public func lock() async throws(ServiceError) -> LockReport {
        try await call(.lock).0
    }

    public func changePassphrase(stretching: KeyStretching?, current: any Interaction,
                                 new: any Interaction) async throws(ServiceError) {
        let arguments = arguments {
            $0.stretching = stretching?.rawValue
            $0.canAskAgain = current.canAskAgain
            $0.newCanAskAgain = new.canAskAgain
        }
        _ = try await call(.changePassphrase, arguments, Parties(interaction: current, newPassphrase: new),
                           as: EmptyReport.self)
    }

    public func enroll(finger: String, user: String?, replace: Bool, device: String?,
                       interaction: any Interaction) async throws(ServiceError) -> EnrollReport {
        let arguments = arguments {
            $0.finger = finger
            $0.user = user
            $0.replace = replace
            $0.device = device
            $0.canAskAgain = interaction.canAskAgain
        }
        return try await call(.enroll, arguments, asking(interaction)).0
    }

    public func printList(user: String?, device: String?,
                          interaction: any Interaction) async throws(ServiceError) -> PrintListReport {
        try await call(.prints, arguments { $0.user = user; $0.device = device }, asking(interaction)).0
    }

    public func deleteOrphans(device: String?, interaction: any Interaction) async throws(ServiceError) -> OrphanDeleteReport {
        try await call(.deleteOrphans, arguments { $0.device = device; $0.canAskAgain = interaction.canAskAgain },
                       asking(interaction)).0
    }

    public func deletePrint(finger: String, user: String?, device: String?,
                            interaction: any Interaction) async throws(ServiceError) -> DeleteReport {
        let arguments = arguments {
            $0.finger = finger
            $0.user = user
            $0.device = device
            $0.canAskAgain = interaction.canAskAgain
        }
        return try await call(.deletePrint, arguments, asking(interaction)).0
    }

    public func clearReader(device: String?, interaction: any Interaction) async throws(ServiceError) -> ClearReport {
        try await call(.clearReader, arguments { $0.device = device; $0.canAskAgain = interaction.canAskAgain },
                       asking(interaction)).0
    }

    public func importFromFprintd(user: String?, from directory: String, dryRun: Bool,
                                  interaction: any Interaction) async throws(ServiceError) -> ImportReport {
        let arguments = arguments {
            $0.user = user
            $0.path = directory
            $0.dryRun = dryRun
            $0.canAskAgain = interaction.canAskAgain
        }
        return try await call(.importFprintd, arguments, asking(interaction)).0
    }

    public func verify(user: String?, finger: String?, device: String?,
                       interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await call(.verify, arguments { $0.user = user; $0.finger = finger; $0.device = device },
                       asking(interaction)).0
    }

    public func identify(device: String?, interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await call(.identify, arguments { $0.device = device }, asking(interaction)).0
    }

    public func listReaders() async throws(ServiceError) -> ReaderInventory {
        try await call(.readers).0
    }

    public func capture(to path: String, format: ImageFormat, device: String?,
                        interaction: any Interaction) async throws(ServiceError) -> CaptureReport {
        try await call(.capture, arguments { $0.path = path; $0.format = format.rawValue; $0.device = device },
                       asking(interaction)).0
    }

    public func settings() async throws(ServiceError) -> SettingsReport {
        try await call(.settings).0
    }

    public func changeSettings(_ change: SettingsChange,
                               interaction: any Interaction) async throws(ServiceError) -> SettingsReport {
        let arguments = arguments {
            $0.lockoutThreshold = change.lockoutThreshold
            $0.lockoutDurationSeconds = change.lockoutDurationSeconds
            $0.sessionTimeoutSeconds = change.sessionTimeoutSeconds
            $0.idleTimeoutSeconds = change.idleTimeoutSeconds
            $0.canAskAgain = interaction.canAskAgain
        }
        return try await call(.changeSettings, arguments, asking(interaction)).0
    }

    public func repair(interaction: any Interaction) async throws(ServiceError) -> RepairReport {
        try await call(.repair, arguments { $0.canAskAgain = interaction.canAskAgain }, asking(interaction)).0
    }

    public func release(_ name: String, device: String?, interaction: any Interaction) async throws(ServiceError) -> SecretBytes {
        let (_, secret) = try await call(.release, arguments { $0.item = name; $0.device = device; $0.canAskAgain = interaction.canAskAgain },
                                         asking(interaction), as: EmptyReport.self)
        guard let secret else { throw ServiceError.daemonReleasedNoValue }
        return secret
    }

    public func store(_ name: String, value: @escaping @Sendable () async throws -> SecretBytes, policy: String, fresh: Bool,
                      replace: Bool, device: String?, interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        let arguments = arguments {
            $0.item = name
            $0.policy = policy
            $0.fresh = fresh
            $0.replace = replace
            $0.device = device
            $0.canAskAgain = interaction.canAskAgain
        }
        return try await call(.store, arguments, Parties(interaction: interaction, secretValue: value)).0
    }

    public func items() async throws(ServiceError) -> [ItemReport] {
        try await call(.items).0
    }

    public func remove(_ name: String, interaction: any Interaction) async throws(ServiceError) {
        _ = try await call(.remove, arguments { $0.item = name; $0.canAskAgain = interaction.canAskAgain }, asking(interaction),
                           as: EmptyReport.self)
    }

    /// The daemon streams the records one `output` line each (a trail of any length, never
    /// one oversized line), then their count.
    public func auditRecords(_ filter: AuditFilter) async throws(ServiceError) -> [AuditRecordReport] {
        let lines = CollectedLines()
        let count = try await call(.auditRecords, arguments { $0.filter = filter }, Parties(output: { lines.append($0) }),
                                   as: CountReport.self).0.count
        let decoder = WireCoding.decoder()
        let records = lines.taken.compactMap { try? decoder.decode(AuditRecordReport.self, from: Data($0.utf8)) }
        guard records.count == count, lines.count == count else {
            throw ServiceError(.daemonUnavailable, "touchgated announced \(count) audit records and sent "
                               + "\(records.count) readable ones; run the command again")
        }
        return records
    }

    public func auditRecordCount(_ filter: AuditFilter) async throws(ServiceError) -> Int {
        try await call(.auditCount, arguments { $0.filter = filter }, as: CountReport.self).0.count
    }

    public func verifyAudit() async throws(ServiceError) -> Int {
        try await call(.verifyAudit, as: CountReport.self).0.count
    }

    public func exportAudit(_ filter: AuditFilter, format: AuditExportFormat,
                            to write: @escaping @Sendable (String) throws -> Void) async throws(ServiceError) -> Int {
        try await call(.exportAudit, arguments { $0.filter = filter; $0.format = format.rawValue },
                       Parties(output: { try? write($0) }),
                       as: CountReport.self).0.count
    }

    public func auditPublicKey() async throws(ServiceError) -> String {
        try await call(.auditPublicKey, as: PublicKeyReport.self).0.publicKey
    }

    public func pruneAudit(before cutoff: Date, force: Bool, interaction: any Interaction) async throws(ServiceError) -> Int {
        let arguments = arguments { $0.before = cutoff; $0.force = force; $0.canAskAgain = interaction.canAskAgain }
        return try await call(.pruneAudit, arguments, asking(interaction), as: CountReport.self).0.count
    }

    /// Has the daemon ship to the collector of its own fleet configuration: the caller's
    /// trail, or for root every user's (`touchgate audit ship` through touchgated). With
    /// `newLog` (root only) the fleet checkpoints kept are forgotten first.
    public func shipAudit(newLog: Bool = false) async throws(ServiceError) -> [AuditShipReport] {
        try await call(.shipAudit, arguments { $0.force = newLog ? true : nil }, as: AuditShipmentsReport.self).0.shipments
    }
}

extension DaemonClient: MigrationTarget {
    public func adopt(database: Int32, auditKey: Int32, from: String,
                      interaction: any Interaction) async throws(ServiceError) -> MigrationReport {
        var parties = asking(interaction)
        parties.descriptors = [database, auditKey]
        return try await call(.migrate, arguments { $0.path = from; $0.canAskAgain = interaction.canAskAgain }, parties).0
    }
}

/// Lines received from the daemon while a request runs.
///
/// `@unchecked Sendable`: `lines` is only touched under `lock`.
private final class CollectedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var count: Int { lock.withLock { lines.count } }
    var taken: [String] { lock.withLock { lines } }
}
