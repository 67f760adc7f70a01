public import FoundationEssentials
import Synchronization
public import TouchgateAPI

/// Each use case as its operation of the table (``Operations``): its own arguments out,
/// its result back.
extension DaemonClient {
    private func asking(_ interaction: any Interaction) -> Parties {
        Parties(interaction: interaction)
    }

    public func status() async throws(ServiceError) -> StatusReport {
        try await call(Operations.Status.self)
    }

    public func initialize(stretching: KeyStretching, tpm: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> InitReport {
        try await call(Operations.Init.self, .init(stretching: stretching, tpm: tpm), asking(interaction)).0
    }

    public func unlock(onlyIfDue: Bool, interaction: any Interaction) async throws(ServiceError) -> UnlockReport {
        try await call(Operations.Unlock.self, .init(onlyIfDue: onlyIfDue), asking(interaction)).0
    }

    public func lock() async throws(ServiceError) -> LockReport {
        try await call(Operations.Lock.self)
    }

    public func passphraseChange(stretching: KeyStretching?, current: any Interaction,
                                 new: any Interaction) async throws(ServiceError) {
        _ = try await call(Operations.PassphraseChange.self, .init(stretching: stretching, newCanAskAgain: new.canAskAgain),
                           Parties(interaction: current, newPassphrase: new))
    }

    public func enroll(finger: String, user: String?, replace: Bool, device: String?,
                       interaction: any Interaction) async throws(ServiceError) -> EnrollReport {
        try await call(Operations.Enroll.self, .init(finger: finger, replace: replace, device: device), user: user,
                       asking(interaction)).0
    }

    public func printsList(user: String?, device: String?,
                          interaction: any Interaction) async throws(ServiceError) -> PrintListReport {
        // The user is the store's to serve (root naming another) and the listing's filter.
        try await call(Operations.PrintsList.self, .init(user: user, device: device), user: user, asking(interaction)).0
    }

    public func printsDeleteOrphans(device: String?, interaction: any Interaction) async throws(ServiceError) -> OrphanDeleteReport {
        try await call(Operations.PrintsDeleteOrphans.self, .init(device: device), asking(interaction)).0
    }

    public func printsDelete(finger: String, user: String?, device: String?,
                            interaction: any Interaction) async throws(ServiceError) -> DeleteReport {
        try await call(Operations.PrintsDelete.self, .init(finger: finger, device: device), user: user,
                       asking(interaction)).0
    }

    public func printsClear(device: String?, interaction: any Interaction) async throws(ServiceError) -> ClearReport {
        try await call(Operations.PrintsClear.self, .init(device: device), asking(interaction)).0
    }

    public func importFprintd(user: String?, from directory: String, dryRun: Bool,
                                  interaction: any Interaction) async throws(ServiceError) -> ImportReport {
        try await call(Operations.ImportFprintd.self, .init(path: directory, dryRun: dryRun), user: user,
                       asking(interaction)).0
    }

    public func verify(user: String?, finger: String?, device: String?,
                       interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await call(Operations.Verify.self, .init(finger: finger, device: device), user: user, asking(interaction)).0
    }

    public func identify(device: String?, interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await call(Operations.Identify.self, .init(device: device), asking(interaction)).0
    }

    public func devices() async throws(ServiceError) -> ReaderInventory {
        try await call(Operations.Devices.self)
    }

    public func capture(to path: String, format: ImageFormat, device: String?,
                        interaction: any Interaction) async throws(ServiceError) -> CaptureReport {
        try await call(Operations.Capture.self, .init(path: path, format: format, device: device), asking(interaction)).0
    }

    public func policyShow() async throws(ServiceError) -> SettingsReport {
        try await call(Operations.PolicyShow.self)
    }

    public func policySet(_ change: SettingsChange,
                               interaction: any Interaction) async throws(ServiceError) -> SettingsReport {
        try await call(Operations.PolicySet.self, change, asking(interaction)).0
    }

    public func repair(interaction: any Interaction) async throws(ServiceError) -> RepairReport {
        try await call(Operations.Repair.self, NoArguments(), asking(interaction)).0
    }

    public func tpmStatus() async throws(ServiceError) -> TPMStatusReport {
        try await call(Operations.TpmStatus.self)
    }

    public func tpmEnroll(interaction: any Interaction) async throws(ServiceError) -> TPMEnrollReport {
        try await call(Operations.TpmEnroll.self, NoArguments(), asking(interaction)).0
    }

    public func tpmRecover(checkpoint: AuditSealReport?, interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
        try await call(Operations.TpmRecover.self, .init(checkpoint: checkpoint), asking(interaction)).0
    }

    public func secretGet(_ name: String, touchNow: Bool, device: String?,
                          interaction: any Interaction) async throws(ServiceError) -> SecretBytes {
        var arguments = Operations.SecretGet.Arguments(item: name, device: device)
        arguments.fresh = touchNow ? true : nil
        let (_, secret) = try await call(Operations.SecretGet.self, arguments, asking(interaction))
        guard let secret else { throw ServiceError.daemonReleasedNoValue }
        return secret
    }

    public func secretAdd(_ name: String, value: @escaping @Sendable () async throws -> SecretBytes, policy: String, fresh: Bool,
                      replace: Bool, device: String?, interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        try await call(Operations.SecretAdd.self,
                       .init(item: name, policy: policy, fresh: fresh, replace: replace, device: device),
                       Parties(interaction: interaction, secretValue: value)).0
    }

    public func secretList() async throws(ServiceError) -> [ItemReport] {
        try await call(Operations.SecretList.self)
    }

    public func secretRm(_ name: String, interaction: any Interaction) async throws(ServiceError) {
        _ = try await call(Operations.SecretRm.self, .init(item: name), asking(interaction))
    }

    public func secretAllow(_ name: String, executable: String, revoke: Bool,
                            interaction: any Interaction) async throws(ServiceError) -> AllowReport {
        try await call(Operations.SecretAllow.self, .init(item: name, executable: executable, revoke: revoke),
                       asking(interaction)).0
    }

    public func approve(_ request: ApprovalRequest, device: String?,
                        interaction: any Interaction) async throws(ServiceError) -> (ApprovalReport, SecretBytes?) {
        try await call(Operations.Approve.self, .init(request: request, device: device), asking(interaction))
    }

    public func secretServiceSearch(_ attributes: [SecretAttribute], collection: String?,
                                    application: ApplicationIdentity?) async throws(ServiceError) -> SecretServiceSearchReport {
        try await call(Operations.SecretServiceSearch.self,
                       .init(attributes: attributes, collection: collection, application: application)).0
    }

    public func secretServiceStore(_ details: ItemDetails, value: @escaping @Sendable () async throws -> SecretBytes,
                                   replace: Bool, application: ApplicationIdentity,
                                   interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        try await call(Operations.SecretServiceStore.self,
                       .init(details: details, replace: replace, application: application),
                       Parties(interaction: interaction, secretValue: value)).0
    }

    public func importSecretService(_ details: [ItemDetails], values: @escaping @Sendable () async throws -> SecretBytes,
                                    interaction: any Interaction) async throws(ServiceError) -> SecretServiceImportReport {
        try await call(Operations.ImportSecretService.self, .init(details: details),
                       Parties(interaction: interaction, secretValue: values)).0
    }

    public func secretServiceDelete(_ name: String, application: ApplicationIdentity,
                                    interaction: any Interaction) async throws(ServiceError) {
        _ = try await call(Operations.SecretServiceDelete.self, .init(item: name, application: application),
                           asking(interaction))
    }

    public func secretServiceRead(_ name: String, application: ApplicationIdentity, approveOnly: Bool,
                                  interaction: any Interaction) async throws(ServiceError) -> SecretBytes? {
        let (_, secret) = try await call(Operations.SecretServiceRead.self,
                                         .init(item: name, application: application, approveOnly: approveOnly),
                                         asking(interaction))
        if approveOnly { return nil }
        guard let secret else { throw ServiceError.daemonReleasedNoValue }
        return secret
    }

    public func sshKeygen(_ name: String, type: String, policy: String, fresh: Bool) async throws(ServiceError) -> SSHKeyReport {
        try await call(Operations.SshKeygen.self, .init(item: name, policy: policy, fresh: fresh, type: type)).0
    }

    public func sshAdd(_ name: String, publicKey: Data, seed: @escaping @Sendable () async throws -> SecretBytes, policy: String,
                       fresh: Bool) async throws(ServiceError) -> SSHKeyReport {
        var parties = Parties()
        parties.secretValue = seed
        return try await call(Operations.SshAdd.self, .init(item: name, policy: policy, fresh: fresh, publicKey: publicKey),
                              parties).0
    }

    public func sshList() async throws(ServiceError) -> [SSHKeyReport] {
        try await call(Operations.SshList.self)
    }

    public func sshSign(_ request: SSHSignRequest, interaction: any Interaction) async throws(ServiceError) -> SSHSignatureReport {
        try await call(Operations.SshSign.self, request, asking(interaction)).0
    }

    public func verifyUnused(secondsAfter: Int) async throws(ServiceError) {
        _ = try await call(Operations.VerifyUnused.self, .init(secondsAfter: secondsAfter))
    }

    public func sshOffer(_ change: SSHOfferChange) async throws(ServiceError) -> [SSHKeyReport] {
        try await call(Operations.SshOffer.self, change).0
    }

    public func sshConfirm(_ question: String, interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await call(Operations.SshConfirm.self, .init(question: question), asking(interaction)).0
    }

    public func sshSkEnroll(_ request: SSHSecurityKeyEnrollRequest) async throws(ServiceError) -> SSHSecurityKeyEnrollment {
        try await call(Operations.SshSkEnroll.self, request).0
    }

    public func sshSkSign(_ request: SSHSecurityKeySignRequest,
                                   interaction: any Interaction) async throws(ServiceError) -> SSHSecurityKeySignature {
        try await call(Operations.SshSkSign.self, request, asking(interaction)).0
    }

    public func passkeyVerify(_ request: PasskeyVerifyRequest,
                              interaction: any Interaction) async throws(ServiceError) -> PasskeyVerification {
        try await call(Operations.PasskeyVerify.self, request, asking(interaction)).0
    }

    public func passkeyMake(_ request: PasskeyMakeRequest) async throws(ServiceError) -> PasskeyMade {
        try await call(Operations.PasskeyMake.self, request).0
    }

    public func passkeyAssert(_ request: PasskeyAssertRequest) async throws(ServiceError) -> PasskeyAssertions {
        try await call(Operations.PasskeyAssert.self, request).0
    }

    public func passkeyList(_ request: PasskeyListRequest) async throws(ServiceError) -> PasskeyListing {
        try await call(Operations.PasskeyList.self, request).0
    }

    public func passkeyDelete(_ request: PasskeyDeleteRequest,
                              interaction: any Interaction) async throws(ServiceError) -> PasskeyReport {
        try await call(Operations.PasskeyDelete.self, request, asking(interaction)).0
    }

    public func passkeyUpdate(_ request: PasskeyUpdateRequest) async throws(ServiceError) -> PasskeyReport {
        try await call(Operations.PasskeyUpdate.self, request).0
    }

    public func passkeyPrompts(interaction: any Interaction) async throws(ServiceError) {
        _ = try await call(Operations.PasskeyPrompts.self, NoArguments(), asking(interaction)).0
    }

    /// The daemon streams the records one `output` line each (a trail of any length, never
    /// one oversized line), then their count.
    public func auditShow(_ filter: AuditFilter) async throws(ServiceError) -> [AuditRecordReport] {
        let lines = CollectedLines()
        let count = try await call(Operations.AuditShow.self, .init(filter: filter),
                                   Parties(output: { lines.append($0) })).0.count
        let decoder = WireCoding.decoder()
        let records = lines.taken.compactMap { try? decoder.decode(AuditRecordReport.self, from: Data($0.utf8)) }
        guard records.count == count, lines.count == count else {
            throw ServiceError(.daemonUnavailable, "touchgated announced \(count) audit records and sent "
                               + "\(records.count) readable ones; run the command again")
        }
        return records
    }

    public func auditCount(_ filter: AuditFilter) async throws(ServiceError) -> Int {
        try await call(Operations.AuditCount.self, .init(filter: filter)).0.count
    }

    public func auditVerify() async throws(ServiceError) -> Int {
        try await call(Operations.AuditVerify.self).count
    }

    public func auditExport(_ filter: AuditFilter, format: AuditExportFormat,
                            to write: @escaping @Sendable (String) throws -> Void) async throws(ServiceError) -> Int {
        try await call(Operations.AuditExport.self, .init(filter: filter, format: format),
                       Parties(output: { try? write($0) })).0.count
    }

    public func auditPublicKey() async throws(ServiceError) -> String {
        try await call(Operations.AuditPublicKey.self).publicKey
    }

    public func auditPrune(before cutoff: Date, force: Bool, interaction: any Interaction) async throws(ServiceError) -> Int {
        try await call(Operations.AuditPrune.self, .init(before: cutoff, force: force), asking(interaction)).0.count
    }

    /// Has the daemon ship to the collector of its own fleet configuration: the caller's
    /// trail, or for root every user's (`touchgate audit ship` through touchgated). With
    /// `newLog` (root only) the fleet checkpoints kept are forgotten first.
    public func shipAudit(newLog: Bool = false) async throws(ServiceError) -> [AuditShipReport] {
        try await call(Operations.AuditShip.self, .init(newLog: newLog)).0.shipments
    }
}

extension DaemonClient: MigrationTarget {
    public func adopt(database: Int32, auditKey: Int32, from: String,
                      interaction: any Interaction) async throws(ServiceError) -> MigrationReport {
        var parties = asking(interaction)
        parties.descriptors = [database, auditKey]
        return try await call(Operations.Migrate.self, .init(path: from), parties).0
    }
}

/// Lines received from the daemon while a request runs.
///
private final class CollectedLines: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var count: Int { lines.withLock { $0.count } }
    var taken: [String] { lines.withLock { $0 } }
}
