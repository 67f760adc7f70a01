public import FoundationEssentials
public import TouchgateAPI

/// The service as one door's caller reaches it: every requirement of ``TouchgateRequests``
/// runs through the host's ``ServiceGate`` with the ``Caller`` the door built, so the
/// who-may-do-what rules run, and the trail names the caller and its door, whichever host
/// serves and whichever door the request came through (the command in its own process, the
/// agent's SSH and Secret Service doors). touchgated's socket reaches the gate through
/// `RequestHandler`; everything else holds one of these.
///
/// One line per use case, beside its line in `DaemonClient+Requests.swift`: the compiler
/// keeps the two complete, as both conform to ``TouchgateRequests``.
public struct GatedRequests: TouchgateRequests {
    /// The gate of the host.
    public let gate: ServiceGate
    /// Who asks, as the door found it.
    public let caller: Caller
    /// The mode of the host's service.
    public let mode: ServiceMode

    /// The host's service behind `gate` (in `mode`), for `caller`.
    public init(gate: ServiceGate, caller: Caller, mode: ServiceMode) {
        self.gate = gate
        self.caller = caller
        self.mode = mode
    }

    /// Runs `use` on the service the gate gives for `operation`. A user a use case names
    /// (`enroll --user`, `import fprintd --user`) is the prints' owner in the one store these
    /// hosts keep, not another store to serve: it is the use case's argument, not the gate's.
    public func gated<T: Sendable>(_ operation: DaemonOperation,
                                   _ use: (TouchgateService) async throws(ServiceError) -> T) async throws(ServiceError) -> T {
        do {
            return try await gate.serve(operation, caller: caller, namedUser: nil, localOnly: false) { service in
                try await use(service)
            }
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.error, String(describing: error))
        }
    }

    public func status() async throws(ServiceError) -> StatusReport {
        try await gated(.status) { service throws(ServiceError) in try await service.status() }
    }

    public func initialize(stretching: KeyStretching, tpm: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> InitReport {
        try await gated(.initialize) { service throws(ServiceError) in
            try await service.initialize(stretching: stretching, tpm: tpm, interaction: interaction)
        }
    }

    public func unlock(onlyIfDue: Bool, interaction: any Interaction) async throws(ServiceError) -> UnlockReport {
        try await gated(.unlock) { service throws(ServiceError) in try await service.unlock(onlyIfDue: onlyIfDue, interaction: interaction) }
    }

    public func lock() async throws(ServiceError) -> LockReport {
        try await gated(.lock) { service throws(ServiceError) in try await service.lock() }
    }

    public func passphraseChange(stretching: KeyStretching?, current: any Interaction,
                                 new: any Interaction) async throws(ServiceError) {
        try await gated(.passphraseChange) { service throws(ServiceError) in
            try await service.passphraseChange(stretching: stretching, current: current, new: new)
        }
    }

    public func enroll(finger: String, user: String?, replace: Bool, device: String?,
                       interaction: any Interaction) async throws(ServiceError) -> EnrollReport {
        try await gated(.enroll) { service throws(ServiceError) in
            try await service.enroll(finger: finger, user: user, replace: replace, device: device, interaction: interaction)
        }
    }

    public func printsList(user: String?, device: String?, interaction: any Interaction) async throws(ServiceError) -> PrintListReport {
        try await gated(.printsList) { service throws(ServiceError) in
            try await service.printsList(user: user, device: device, interaction: interaction)
        }
    }

    public func printsDeleteOrphans(device: String?, interaction: any Interaction) async throws(ServiceError) -> OrphanDeleteReport {
        try await gated(.printsDeleteOrphans) { service throws(ServiceError) in
            try await service.printsDeleteOrphans(device: device, interaction: interaction)
        }
    }

    public func printsDelete(finger: String, user: String?, device: String?,
                             interaction: any Interaction) async throws(ServiceError) -> DeleteReport {
        try await gated(.printsDelete) { service throws(ServiceError) in
            try await service.printsDelete(finger: finger, user: user, device: device, interaction: interaction)
        }
    }

    public func printsClear(device: String?, interaction: any Interaction) async throws(ServiceError) -> ClearReport {
        try await gated(.printsClear) { service throws(ServiceError) in try await service.printsClear(device: device, interaction: interaction) }
    }

    public func importFprintd(user: String?, from directory: String, dryRun: Bool,
                              interaction: any Interaction) async throws(ServiceError) -> ImportReport {
        try await gated(.importFprintd) { service throws(ServiceError) in
            try await service.importFprintd(user: user, from: directory, dryRun: dryRun, interaction: interaction)
        }
    }

    public func verify(user: String?, finger: String?, device: String?,
                       interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await gated(.verify) { service throws(ServiceError) in
            try await service.verify(user: user, finger: finger, device: device, interaction: interaction)
        }
    }

    public func identify(device: String?, interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await gated(.identify) { service throws(ServiceError) in try await service.identify(device: device, interaction: interaction) }
    }

    public func devices() async throws(ServiceError) -> ReaderInventory {
        try await gated(.devices) { service throws(ServiceError) in try await service.devices() }
    }

    public func capture(to path: String, format: ImageFormat, device: String?,
                        interaction: any Interaction) async throws(ServiceError) -> CaptureReport {
        try await gated(.capture) { service throws(ServiceError) in
            try await service.capture(to: path, format: format, device: device, interaction: interaction)
        }
    }

    public func policyShow() async throws(ServiceError) -> SettingsReport {
        try await gated(.policyShow) { service throws(ServiceError) in try await service.policyShow() }
    }

    public func policySet(_ change: SettingsChange, interaction: any Interaction) async throws(ServiceError) -> SettingsReport {
        try await gated(.policySet) { service throws(ServiceError) in try await service.policySet(change, interaction: interaction) }
    }

    public func repair(interaction: any Interaction) async throws(ServiceError) -> RepairReport {
        try await gated(.repair) { service throws(ServiceError) in try await service.repair(interaction: interaction) }
    }

    public func tpmStatus() async throws(ServiceError) -> TPMStatusReport {
        try await gated(.tpmStatus) { service throws(ServiceError) in try await service.tpmStatus() }
    }

    public func tpmEnroll(interaction: any Interaction) async throws(ServiceError) -> TPMEnrollReport {
        try await gated(.tpmEnroll) { service throws(ServiceError) in try await service.tpmEnroll(interaction: interaction) }
    }

    public func tpmRecover(checkpoint: AuditSealReport?, interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
        try await gated(.tpmRecover) { service throws(ServiceError) in
            try await service.tpmRecover(checkpoint: checkpoint, interaction: interaction)
        }
    }

    public func secretGet(_ name: String, touchNow: Bool, device: String?,
                          interaction: any Interaction) async throws(ServiceError) -> SecretBytes {
        try await gated(.secretGet) { service throws(ServiceError) in
            try await service.secretGet(name, touchNow: touchNow, device: device, interaction: interaction)
        }
    }

    public func secretAdd(_ name: String, value: @escaping @Sendable () async throws -> SecretBytes, policy: String, fresh: Bool,
                          replace: Bool, device: String?, interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        try await gated(.secretAdd) { service throws(ServiceError) in
            try await service.secretAdd(name, value: value, policy: policy, fresh: fresh, replace: replace, device: device,
                                        interaction: interaction)
        }
    }

    public func secretList() async throws(ServiceError) -> [ItemReport] {
        try await gated(.secretList) { service throws(ServiceError) in try await service.secretList() }
    }

    public func secretRm(_ name: String, interaction: any Interaction) async throws(ServiceError) {
        try await gated(.secretRm) { service throws(ServiceError) in try await service.secretRm(name, interaction: interaction) }
    }

    public func secretAllow(_ name: String, executable: String, revoke: Bool,
                            interaction: any Interaction) async throws(ServiceError) -> AllowReport {
        try await gated(.secretAllow) { service throws(ServiceError) in
            try await service.secretAllow(name, executable: executable, revoke: revoke, interaction: interaction)
        }
    }

    public func approve(_ request: ApprovalRequest, device: String?,
                        interaction: any Interaction) async throws(ServiceError) -> (ApprovalReport, SecretBytes?) {
        try await gated(.approve) { service throws(ServiceError) in
            try await service.approve(request, device: device, interaction: interaction)
        }
    }

    public func secretServiceSearch(_ attributes: [SecretAttribute], collection: String?,
                                    application: ApplicationIdentity?) async throws(ServiceError) -> SecretServiceSearchReport {
        try await gated(.secretServiceSearch) { service throws(ServiceError) in
            try await service.secretServiceSearch(attributes, collection: collection, application: application)
        }
    }

    public func secretServiceStore(_ details: ItemDetails, value: @escaping @Sendable () async throws -> SecretBytes,
                                   replace: Bool, application: ApplicationIdentity,
                                   interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        try await gated(.secretServiceStore) { service throws(ServiceError) in
            try await service.secretServiceStore(details, value: value, replace: replace, application: application,
                                                 interaction: interaction)
        }
    }

    public func importSecretService(_ details: [ItemDetails], values: @escaping @Sendable () async throws -> SecretBytes,
                                    interaction: any Interaction) async throws(ServiceError) -> SecretServiceImportReport {
        try await gated(.importSecretService) { service throws(ServiceError) in
            try await service.importSecretService(details, values: values, interaction: interaction)
        }
    }

    public func secretServiceDelete(_ name: String, application: ApplicationIdentity,
                                    interaction: any Interaction) async throws(ServiceError) {
        try await gated(.secretServiceDelete) { service throws(ServiceError) in
            try await service.secretServiceDelete(name, application: application, interaction: interaction)
        }
    }

    public func secretServiceRead(_ name: String, application: ApplicationIdentity, approveOnly: Bool,
                                  interaction: any Interaction) async throws(ServiceError) -> SecretBytes? {
        try await gated(.secretServiceRead) { service throws(ServiceError) in
            try await service.secretServiceRead(name, application: application, approveOnly: approveOnly,
                                                interaction: interaction)
        }
    }

    public func auditShow(_ filter: AuditFilter) async throws(ServiceError) -> [AuditRecordReport] {
        try await gated(.auditShow) { service throws(ServiceError) in try await service.auditShow(filter) }
    }

    public func auditCount(_ filter: AuditFilter) async throws(ServiceError) -> Int {
        try await gated(.auditCount) { service throws(ServiceError) in try await service.auditCount(filter) }
    }

    public func auditVerify() async throws(ServiceError) -> Int {
        try await gated(.auditVerify) { service throws(ServiceError) in try await service.auditVerify() }
    }

    public func auditExport(_ filter: AuditFilter, format: AuditExportFormat,
                            to write: @escaping @Sendable (String) throws -> Void) async throws(ServiceError) -> Int {
        try await gated(.auditExport) { service throws(ServiceError) in try await service.auditExport(filter, format: format, to: write) }
    }

    public func auditPublicKey() async throws(ServiceError) -> String {
        try await gated(.auditPublicKey) { service throws(ServiceError) in try await service.auditPublicKey() }
    }

    public func auditPrune(before cutoff: Date, force: Bool, interaction: any Interaction) async throws(ServiceError) -> Int {
        try await gated(.auditPrune) { service throws(ServiceError) in
            try await service.auditPrune(before: cutoff, force: force, interaction: interaction)
        }
    }

    public func sshKeygen(_ name: String, type: String, policy: String, fresh: Bool) async throws(ServiceError) -> SSHKeyReport {
        try await gated(.sshKeygen) { service throws(ServiceError) in try await service.sshKeygen(name, type: type, policy: policy, fresh: fresh) }
    }

    public func sshAdd(_ name: String, publicKey: Data, seed: @escaping @Sendable () async throws -> SecretBytes, policy: String,
                       fresh: Bool) async throws(ServiceError) -> SSHKeyReport {
        try await gated(.sshAdd) { service throws(ServiceError) in
            try await service.sshAdd(name, publicKey: publicKey, seed: seed, policy: policy, fresh: fresh)
        }
    }

    public func sshList() async throws(ServiceError) -> [SSHKeyReport] {
        try await gated(.sshList) { service throws(ServiceError) in try await service.sshList() }
    }

    public func sshSign(_ request: SSHSignRequest, interaction: any Interaction) async throws(ServiceError) -> SSHSignatureReport {
        try await gated(.sshSign) { service throws(ServiceError) in try await service.sshSign(request, interaction: interaction) }
    }

    public func verifyUnused(secondsAfter: Int) async throws(ServiceError) {
        try await gated(.verifyUnused) { service throws(ServiceError) in try await service.verifyUnused(secondsAfter: secondsAfter) }
    }

    public func sshOffer(_ change: SSHOfferChange) async throws(ServiceError) -> [SSHKeyReport] {
        try await gated(.sshOffer) { service throws(ServiceError) in try await service.sshOffer(change) }
    }

    public func sshConfirm(_ question: String, interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await gated(.sshConfirm) { service throws(ServiceError) in try await service.sshConfirm(question, interaction: interaction) }
    }

    public func sshSkEnroll(_ request: SSHSecurityKeyEnrollRequest) async throws(ServiceError) -> SSHSecurityKeyEnrollment {
        try await gated(.sshSkEnroll) { service throws(ServiceError) in try await service.sshSkEnroll(request) }
    }

    public func sshSkSign(_ request: SSHSecurityKeySignRequest,
                          interaction: any Interaction) async throws(ServiceError) -> SSHSecurityKeySignature {
        try await gated(.sshSkSign) { service throws(ServiceError) in try await service.sshSkSign(request, interaction: interaction) }
    }

    public func passkeyVerify(_ request: PasskeyVerifyRequest,
                              interaction: any Interaction) async throws(ServiceError) -> PasskeyVerification {
        try await gated(.passkeyVerify) { service throws(ServiceError) in try await service.passkeyVerify(request, interaction: interaction) }
    }

    public func passkeyMake(_ request: PasskeyMakeRequest) async throws(ServiceError) -> PasskeyMade {
        try await gated(.passkeyMake) { service throws(ServiceError) in try await service.passkeyMake(request) }
    }

    public func passkeyAssert(_ request: PasskeyAssertRequest) async throws(ServiceError) -> PasskeyAssertions {
        try await gated(.passkeyAssert) { service throws(ServiceError) in try await service.passkeyAssert(request) }
    }

    public func passkeyList(_ request: PasskeyListRequest) async throws(ServiceError) -> PasskeyListing {
        try await gated(.passkeyList) { service throws(ServiceError) in try await service.passkeyList(request) }
    }

    public func passkeyDelete(_ request: PasskeyDeleteRequest,
                              interaction: any Interaction) async throws(ServiceError) -> PasskeyReport {
        try await gated(.passkeyDelete) { service throws(ServiceError) in try await service.passkeyDelete(request, interaction: interaction) }
    }

    public func passkeyUpdate(_ request: PasskeyUpdateRequest) async throws(ServiceError) -> PasskeyReport {
        try await gated(.passkeyUpdate) { service throws(ServiceError) in try await service.passkeyUpdate(request) }
    }

    public func passkeyPrompts(interaction: any Interaction) async throws(ServiceError) {
        try await gated(.passkeyPrompts) { service throws(ServiceError) in try await service.passkeyPrompts(interaction: interaction) }
    }
}
