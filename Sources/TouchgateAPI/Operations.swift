public import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// One operation of the protocol, declared once: its wire name, its typed arguments, its
/// typed result, and how it is served: clients send `Arguments` and decode `Result`;
/// touchgated decodes `Arguments` and calls ``serve(_:on:exchange:)``, with no code of its
/// own per operation. Who may ask and the rest of its promise are its ``OperationContract``
/// (``DaemonOperation/contract``), rendered into docs/PROTOCOL.md.
///
/// On the wire the arguments are one object: those every request may carry
/// (``RequestArguments``: `user`, `can-ask-again`, `assume-yes`, `requester`, `local-only`)
/// beside the operation's own, in kebab case.
public protocol OperationSpec: Sendable {
    /// The operation's own arguments.
    associatedtype Arguments: Codable & Sendable & Equatable
    /// What a successful request answers.
    associatedtype Result: Codable & Sendable
    /// Its wire name.
    static var operation: DaemonOperation { get }

    /// Serves the operation on `requests` (the service, in-process or in touchgated) with
    /// what its door carries beside the arguments (``RequestExchange``): the person's
    /// questions, a secret value sent after the request, lines of output, passed files.
    static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                      exchange: any RequestExchange) async throws(ServiceError) -> Served<Result>
}

/// What an operation answers: its result, and the secret bytes that travel beside it (a
/// released value), never inside the encoded result.
public struct Served<Result: Sendable>: Sendable {
    public let result: Result
    public let secret: SecretBytes?
    public init(_ result: Result, secret: SecretBytes? = nil) {
        self.result = result
        self.secret = secret
    }
}

/// What a request carries beside its arguments, as its door gives it: the person asked
/// (``interaction``), the secret value the client sends after the request, lines of output
/// streamed back, descriptors passed with it, and what only the host that serves it can do.
/// touchgated's socket gives one per request; an operation takes from it what its type says.
public protocol RequestExchange: Sendable {
    /// The person behind the request: prompts, progress, the passphrase.
    var interaction: any Interaction { get }
    /// The value the client sends after the request (`secret add`, `ssh add`, a Secret
    /// Service item): asked for only when the use case needs it.
    func secretValue() async throws -> SecretBytes
    /// The party asked for a new passphrase (`passphrase.change`), which can be asked again
    /// after a refusal only when the client said so.
    func newPassphraseParty(canAskAgain: Bool) -> any Interaction
    /// Sends one line of output, waiting while the client is slow; throws once it is gone.
    /// Called from a thread of the caller's own (it blocks).
    func output(_ line: String) throws
    /// Sends `lines` as ``output(_:)`` does, from a thread of their own.
    func output(lines: [String]) async throws
    /// The descriptors passed with the request, taken once; the taker closes them.
    func takeDescriptors() -> [Int32]
    /// Ships the trails this host sends to its fleet (`audit.ship`): touchgated's own work.
    func shipTrails(newLog: Bool) async throws(ServiceError) -> [AuditShipReport]
    /// Adopts a personal store passed as `database` and `auditKey` (`migrate`): touchgated's
    /// own work, for its caller alone.
    func adoptMigration(database: Int32, auditKey: Int32, from path: String) async throws(ServiceError) -> MigrationReport
}

/// An operation served by calling one use case of ``TouchgateRequests`` with its arguments
/// and the person's ``Interaction``, and nothing else of its door.
public protocol ServedOperation: OperationSpec {
    /// Runs the operation on `requests` (the service, in-process or in touchgated).
    static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                        interaction: any Interaction) async throws(ServiceError) -> Result
}

extension ServedOperation {
    public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                             exchange: any RequestExchange) async throws(ServiceError) -> Served<Result> {
        Served(try await perform(arguments, on: requests, interaction: exchange.interaction))
    }
}

/// The arguments of an operation that has none of its own.
public struct NoArguments: Codable, Sendable, Equatable {
    public init() {}
}

/// The operation table: one type per operation, named after its wire name.
public enum Operations {
    /// Every operation served by one use case with the person's questions alone.
    public static let served: [any ServedOperation.Type] = [
        Status.self, Init.self, Unlock.self, Lock.self, Enroll.self, PrintsList.self, PrintsDelete.self,
        PrintsDeleteOrphans.self, PrintsClear.self, ImportFprintd.self, Verify.self, Identify.self, Devices.self,
        Capture.self, PolicyShow.self, PolicySet.self, Repair.self, SecretList.self, SecretRm.self, AuditCount.self,
        AuditVerify.self, AuditPublicKey.self, SshKeygen.self, SshList.self, SshSign.self,
        SshSkEnroll.self, SshSkSign.self, SshOffer.self, SshConfirm.self, VerifyUnused.self, SecretAllow.self, SecretServiceSearch.self, SecretServiceDelete.self,
        TpmStatus.self, TpmEnroll.self, TpmRecover.self, AuditPrune.self,
        PasskeyVerify.self, PasskeyMake.self, PasskeyAssert.self, PasskeyList.self, PasskeyDelete.self, PasskeyUpdate.self,
        PasskeyPrompts.self,
    ]

    /// The operations that carry more through their door (``RequestExchange``): secret
    /// bytes either way, a stream of output, passed files, a second party to ask, or the
    /// host's own work. Served from the table all the same.
    public static let carrying: [any OperationSpec.Type] = [
        PassphraseChange.self, SecretGet.self, SecretAdd.self, AuditShow.self, AuditExport.self, AuditShip.self,
        Migrate.self, SshAdd.self, SecretServiceStore.self, SecretServiceRead.self, ImportSecretService.self,
        Approve.self,
    ]

    /// Every entry by its operation, built once (a test keeps one entry per operation).
    private static let byOperation: [DaemonOperation: any OperationSpec.Type] = {
        var table: [DaemonOperation: any OperationSpec.Type] = [:]
        for entry in served as [any OperationSpec.Type] + carrying { table[entry.operation] = entry }
        return table
    }()

    /// The table's entry for `operation`.
    public static func spec(_ operation: DaemonOperation) -> any OperationSpec.Type {
        byOperation[operation]!
    }

    /// A usage error for an argument whose value is not one of `known`.
    static func unknown<T: RawRepresentable & CaseIterable>(_ value: String, _ what: String,
                                                           _ type: T.Type) -> ServiceError where T.RawValue == String {
        ServiceError(.usage, "unknown \(what) '\(StoredText.escaped(value))'; use "
                     + T.allCases.map(\.rawValue).joined(separator: ", "))
    }

    // MARK: The vault

    public enum Status: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = StatusReport
        public static let operation = DaemonOperation.status
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> StatusReport {
            try await requests.status()
        }
    }

    public enum Init: ServedOperation {
        public typealias Result = InitReport
        public struct Arguments: Codable, Sendable, Equatable {
            /// How hard the key is stretched (`moderate`, the default, or `minimum`).
            public var stretching: String?
            /// Bind the vault key to the TPM at once.
            public var tpm: Bool?
            public init(stretching: KeyStretching, tpm: Bool = false) {
                self.stretching = stretching.rawValue
                self.tpm = tpm ? true : nil
            }
        }
        public static let operation = DaemonOperation.initialize
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> InitReport {
            try await requests.initialize(stretching: try stretching(arguments.stretching) ?? .moderate,
                                          tpm: arguments.tpm ?? false, interaction: interaction)
        }
    }

    /// The stretching a request names, or nil for none.
    public static func stretching(_ text: String?) throws(ServiceError) -> KeyStretching? {
        guard let text else { return nil }
        guard let stretching = KeyStretching(rawValue: text) else { throw unknown(text, "key stretching", KeyStretching.self) }
        return stretching
    }

    public enum Unlock: ServedOperation {
        public typealias Result = UnlockReport
        public struct Arguments: Codable, Sendable, Equatable {
            /// Only when the passphrase is due (the vault locked, or its policy wanting it).
            public var onlyIfDue: Bool?
            public init(onlyIfDue: Bool) { self.onlyIfDue = onlyIfDue ? true : nil }
        }
        public static let operation = DaemonOperation.unlock
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> UnlockReport {
            try await requests.unlock(onlyIfDue: arguments.onlyIfDue ?? false, interaction: interaction)
        }
    }

    public enum Lock: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = LockReport
        public static let operation = DaemonOperation.lock
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> LockReport {
            try await requests.lock()
        }
    }

    public enum PassphraseChange: OperationSpec {
        public struct Arguments: Codable, Sendable, Equatable {
            public var stretching: String?
            /// Whether the new passphrase can be asked again.
            public var newCanAskAgain: Bool?
            public init(stretching: KeyStretching?, newCanAskAgain: Bool) {
                self.stretching = stretching?.rawValue
                self.newCanAskAgain = newCanAskAgain
            }
        }
        public typealias Result = EmptyReport
        public static let operation = DaemonOperation.passphraseChange
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<EmptyReport> {
            try await requests.passphraseChange(stretching: try stretching(arguments.stretching), current: exchange.interaction,
                                                new: exchange.newPassphraseParty(canAskAgain: arguments.newCanAskAgain ?? false))
            return Served(EmptyReport())
        }
    }

    // MARK: Fingers and readers

    public enum Enroll: ServedOperation {
        public typealias Result = EnrollReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var finger: String
            public var replace: Bool?
            public var device: String?
            public init(finger: String, replace: Bool, device: String?) {
                self.finger = finger
                self.replace = replace
                self.device = device
            }
        }
        public static let operation = DaemonOperation.enroll
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> EnrollReport {
            try await requests.enroll(finger: arguments.finger, user: nil, replace: arguments.replace ?? false,
                                      device: arguments.device, interaction: interaction)
        }
    }

    public enum PrintsList: ServedOperation {
        public typealias Result = PrintListReport
        public struct Arguments: Codable, Sendable, Equatable {
            /// Only this user's prints (within the store served).
            public var user: String?
            public var device: String?
            public init(user: String?, device: String?) {
                self.user = user
                self.device = device
            }
        }
        public static let operation = DaemonOperation.printsList
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PrintListReport {
            try await requests.printsList(user: arguments.user, device: arguments.device, interaction: interaction)
        }
    }

    public enum PrintsDelete: ServedOperation {
        public typealias Result = DeleteReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var finger: String
            public var device: String?
            public init(finger: String, device: String?) {
                self.finger = finger
                self.device = device
            }
        }
        public static let operation = DaemonOperation.printsDelete
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> DeleteReport {
            try await requests.printsDelete(finger: arguments.finger, user: nil, device: arguments.device,
                                           interaction: interaction)
        }
    }

    /// The arguments of an operation on one reader.
    public struct ReaderArguments: Codable, Sendable, Equatable {
        /// A reader's device id or driver (nil: the first reader).
        public var device: String?
        public init(device: String?) { self.device = device }
    }

    public enum PrintsDeleteOrphans: ServedOperation {
        public typealias Arguments = ReaderArguments
        public typealias Result = OrphanDeleteReport
        public static let operation = DaemonOperation.printsDeleteOrphans
        public static func perform(_ arguments: ReaderArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> OrphanDeleteReport {
            try await requests.printsDeleteOrphans(device: arguments.device, interaction: interaction)
        }
    }

    public enum PrintsClear: ServedOperation {
        public typealias Arguments = ReaderArguments
        public typealias Result = ClearReport
        public static let operation = DaemonOperation.printsClear
        public static func perform(_ arguments: ReaderArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> ClearReport {
            try await requests.printsClear(device: arguments.device, interaction: interaction)
        }
    }

    public enum ImportFprintd: ServedOperation {
        public typealias Result = ImportReport
        public struct Arguments: Codable, Sendable, Equatable {
            /// fprintd's store.
            public var path: String
            public var dryRun: Bool?
            public init(path: String, dryRun: Bool) {
                self.path = path
                self.dryRun = dryRun
            }
        }
        public static let operation = DaemonOperation.importFprintd
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> ImportReport {
            try await requests.importFprintd(user: nil, from: arguments.path, dryRun: arguments.dryRun ?? false,
                                                 interaction: interaction)
        }
    }

    public enum Verify: ServedOperation {
        public typealias Result = MatchReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var finger: String?
            public var device: String?
            public init(finger: String?, device: String?) {
                self.finger = finger
                self.device = device
            }
        }
        public static let operation = DaemonOperation.verify
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> MatchReport {
            try await requests.verify(user: nil, finger: arguments.finger, device: arguments.device, interaction: interaction)
        }
    }

    public enum Identify: ServedOperation {
        public typealias Arguments = ReaderArguments
        public typealias Result = MatchReport
        public static let operation = DaemonOperation.identify
        public static func perform(_ arguments: ReaderArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> MatchReport {
            try await requests.identify(device: arguments.device, interaction: interaction)
        }
    }

    public enum Devices: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = ReaderInventory
        public static let operation = DaemonOperation.devices
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> ReaderInventory {
            try await requests.devices()
        }
    }

    public enum Capture: ServedOperation {
        public typealias Result = CaptureReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var path: String
            public var format: String
            public var device: String?
            public init(path: String, format: ImageFormat, device: String?) {
                self.path = path
                self.format = format.rawValue
                self.device = device
            }
        }
        public static let operation = DaemonOperation.capture
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> CaptureReport {
            guard let format = ImageFormat(rawValue: arguments.format) else {
                throw unknown(arguments.format, "image format", ImageFormat.self)
            }
            return try await requests.capture(to: arguments.path, format: format, device: arguments.device,
                                              interaction: interaction)
        }
    }

    // MARK: Policy and repair

    public enum PolicyShow: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = SettingsReport
        public static let operation = DaemonOperation.policyShow
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> SettingsReport {
            try await requests.policyShow()
        }
    }

    public enum PolicySet: ServedOperation {
        public typealias Result = SettingsReport
        public typealias Arguments = SettingsChange
        public static let operation = DaemonOperation.policySet
        public static func perform(_ arguments: SettingsChange, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> SettingsReport {
            try await requests.policySet(arguments, interaction: interaction)
        }
    }

    public enum TpmStatus: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = TPMStatusReport
        public static let operation = DaemonOperation.tpmStatus
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> TPMStatusReport {
            try await requests.tpmStatus()
        }
    }

    public enum TpmEnroll: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = TPMEnrollReport
        public static let operation = DaemonOperation.tpmEnroll
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> TPMEnrollReport {
            try await requests.tpmEnroll(interaction: interaction)
        }
    }

    public enum TpmRecover: ServedOperation {
        public struct Arguments: Codable, Sendable, Equatable {
            /// A seal the owner exported earlier (`audit export`'s last line), which the
            /// store is compared with before anything is accepted.
            public var checkpoint: AuditSealReport?
            public init(checkpoint: AuditSealReport?) { self.checkpoint = checkpoint }
        }
        public typealias Result = EmptyReport
        public static let operation = DaemonOperation.tpmRecover
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
            try await requests.tpmRecover(checkpoint: arguments.checkpoint, interaction: interaction)
        }
    }

    public enum Repair: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = RepairReport
        public static let operation = DaemonOperation.repair
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> RepairReport {
            try await requests.repair(interaction: interaction)
        }
    }

    // MARK: Secrets

    public enum SecretGet: OperationSpec {
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public var device: String?
            /// A touch made for this release (no reuse session).
            public var fresh: Bool?
            public init(item: String, device: String?) {
                self.item = item
                self.device = device
            }
        }
        /// `{}`, and the value as secret bytes after it.
        public typealias Result = EmptyReport
        public static let operation = DaemonOperation.secretGet
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<EmptyReport> {
            Served(EmptyReport(), secret: try await requests.secretGet(arguments.item, touchNow: arguments.fresh ?? false,
                                                                       device: arguments.device,
                                                                       interaction: exchange.interaction))
        }
    }

    public enum SecretAdd: OperationSpec {
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public var policy: String
            public var fresh: Bool?
            public var replace: Bool?
            public var device: String?
            public init(item: String, policy: String, fresh: Bool, replace: Bool, device: String?) {
                self.item = item
                self.policy = policy
                self.fresh = fresh
                self.replace = replace
                self.device = device
            }
        }
        public typealias Result = StoredReport
        public static let operation = DaemonOperation.secretAdd
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<StoredReport> {
            Served(try await requests.secretAdd(arguments.item, value: { try await exchange.secretValue() },
                                                policy: arguments.policy, fresh: arguments.fresh ?? false,
                                                replace: arguments.replace ?? false, device: arguments.device,
                                                interaction: exchange.interaction))
        }
    }

    public enum SecretList: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = [ItemReport]
        public static let operation = DaemonOperation.secretList
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> [ItemReport] {
            try await requests.secretList()
        }
    }

    public enum SecretRm: ServedOperation {
        public typealias Result = EmptyReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public init(item: String) { self.item = item }
        }
        public static let operation = DaemonOperation.secretRm
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
            try await requests.secretRm(arguments.item, interaction: interaction)
            return EmptyReport()
        }
    }

    public enum SecretAllow: ServedOperation {
        public typealias Result = AllowReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public var executable: String
            /// Takes the executable off the list instead.
            public var revoke: Bool?
            public init(item: String, executable: String, revoke: Bool) {
                self.item = item
                self.executable = executable
                self.revoke = revoke
            }
        }
        public static let operation = DaemonOperation.secretAllow
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> AllowReport {
            try await requests.secretAllow(arguments.item, executable: arguments.executable,
                                           revoke: arguments.revoke ?? false, interaction: interaction)
        }
    }

    // MARK: The Secret Service

    public enum SecretServiceSearch: ServedOperation {
        public typealias Result = SecretServiceSearchReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var attributes: [SecretAttribute]
            /// Only this collection's items (nil: every collection's).
            public var collection: String?
            public var application: ApplicationIdentity?
            public init(attributes: [SecretAttribute], collection: String?, application: ApplicationIdentity?) {
                self.attributes = attributes
                self.collection = collection
                self.application = application
            }
        }
        public static let operation = DaemonOperation.secretServiceSearch
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> SecretServiceSearchReport {
            try await requests.secretServiceSearch(arguments.attributes, collection: arguments.collection,
                                                   application: arguments.application)
        }
    }

    public enum SecretServiceStore: OperationSpec {
        public typealias Result = StoredReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var details: ItemDetails
            public var replace: Bool?
            public var application: ApplicationIdentity
            public init(details: ItemDetails, replace: Bool, application: ApplicationIdentity) {
                self.details = details
                self.replace = replace
                self.application = application
            }
        }
        public static let operation = DaemonOperation.secretServiceStore
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<StoredReport> {
            Served(try await requests.secretServiceStore(arguments.details, value: { try await exchange.secretValue() },
                                                         replace: arguments.replace ?? false,
                                                         application: arguments.application,
                                                         interaction: exchange.interaction))
        }
    }

    public enum SecretServiceDelete: ServedOperation {
        public typealias Result = EmptyReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public var application: ApplicationIdentity
            public init(item: String, application: ApplicationIdentity) {
                self.item = item
                self.application = application
            }
        }
        public static let operation = DaemonOperation.secretServiceDelete
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
            try await requests.secretServiceDelete(arguments.item, application: arguments.application, interaction: interaction)
            return EmptyReport()
        }
    }

    public enum SecretServiceRead: OperationSpec {
        /// `{}`, and the value as secret bytes after it (none with `approve-only`).
        public typealias Result = EmptyReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public var application: ApplicationIdentity
            public var approveOnly: Bool?
            public init(item: String, application: ApplicationIdentity, approveOnly: Bool) {
                self.item = item
                self.application = application
                self.approveOnly = approveOnly
            }
        }
        public static let operation = DaemonOperation.secretServiceRead
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<EmptyReport> {
            Served(EmptyReport(), secret: try await requests.secretServiceRead(
                arguments.item, application: arguments.application, approveOnly: arguments.approveOnly ?? false,
                interaction: exchange.interaction))
        }
    }

    public enum Approve: OperationSpec {
        public typealias Result = ApprovalReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var request: ApprovalRequest
            public var device: String?
            public init(request: ApprovalRequest, device: String?) {
                self.request = request
                self.device = device
            }
        }
        public static let operation = DaemonOperation.approve
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<ApprovalReport> {
            let (report, values) = try await requests.approve(arguments.request, device: arguments.device,
                                                              interaction: exchange.interaction)
            return Served(report, secret: values)
        }
    }

    public enum ImportSecretService: OperationSpec {
        public typealias Result = SecretServiceImportReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var details: [ItemDetails]
            public init(details: [ItemDetails]) { self.details = details }
        }
        public static let operation = DaemonOperation.importSecretService
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<SecretServiceImportReport> {
            Served(try await requests.importSecretService(arguments.details, values: { try await exchange.secretValue() },
                                                          interaction: exchange.interaction))
        }
    }

    // MARK: The audit trail

    /// The arguments of an operation over selected records.
    public struct FilterArguments: Codable, Sendable, Equatable {
        public var filter: AuditFilter?
        public init(filter: AuditFilter) { self.filter = filter }
    }

    public enum AuditShow: OperationSpec {
        public typealias Arguments = FilterArguments
        /// After one `output` line per record.
        public typealias Result = CountReport
        public static let operation = DaemonOperation.auditShow
        /// One output line per record, as fast as the client reads them: a trail of any
        /// length, never one line past the protocol's limit.
        public static func serve(_ arguments: FilterArguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<CountReport> {
            let records = try await requests.auditShow(arguments.filter ?? AuditFilter())
            do {
                try await exchange.output(lines: records.map { WireCoding.line($0) })
            } catch {
                throw .cancelled
            }
            return Served(CountReport(count: records.count))
        }
    }

    public enum AuditCount: ServedOperation {
        public typealias Arguments = FilterArguments
        public typealias Result = CountReport
        public static let operation = DaemonOperation.auditCount
        public static func perform(_ arguments: FilterArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> CountReport {
            CountReport(count: try await requests.auditCount(arguments.filter ?? AuditFilter()))
        }
    }

    public enum AuditVerify: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = CountReport
        public static let operation = DaemonOperation.auditVerify
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> CountReport {
            CountReport(count: try await requests.auditVerify())
        }
    }

    public enum AuditExport: OperationSpec {
        public struct Arguments: Codable, Sendable, Equatable {
            public var filter: AuditFilter?
            /// `json` (the default), `ocsf` or `ecs`.
            public var format: String?
            public init(filter: AuditFilter, format: AuditExportFormat) {
                self.filter = filter
                self.format = format.rawValue
            }
        }
        /// After one `output` line per record.
        public typealias Result = CountReport
        public static let operation = DaemonOperation.auditExport
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<CountReport> {
            // The service writes on a thread of its own, so waiting for a slow reader holds no
            // shared thread; a reader that stops reading is cut off, which ends the export.
            Served(CountReport(count: try await requests.auditExport(arguments.filter ?? AuditFilter(),
                                                                     format: try format(arguments)) { text in
                try exchange.output(text)
            }))
        }

        /// The format a request names (`json` when none).
        public static func format(_ arguments: Arguments) throws(ServiceError) -> AuditExportFormat {
            let text = arguments.format ?? AuditExportFormat.json.rawValue
            guard let format = AuditExportFormat(rawValue: text) else {
                throw unknown(text, "audit export format", AuditExportFormat.self)
            }
            return format
        }
    }

    public enum AuditPrune: ServedOperation {
        public typealias Result = CountReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var before: Date
            public var force: Bool?
            public init(before: Date, force: Bool) {
                self.before = before
                self.force = force
            }

            enum CodingKeys: String, CodingKey { case before, force }

            /// Read by hand only so that a `before` that is not a time is named in the error
            /// (the date strategy's own error leaves the key out of its path).
            public init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                let text = try container.decode(String.self, forKey: .before)
                guard let before = try? Date.ISO8601FormatStyle().parse(text) else {
                    throw DecodingError.dataCorruptedError(forKey: .before, in: container,
                                                           debugDescription: "not an ISO 8601 time")
                }
                self.before = before
                force = try container.decodeIfPresent(Bool.self, forKey: .force)
            }
        }
        public static let operation = DaemonOperation.auditPrune
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> CountReport {
            CountReport(count: try await requests.auditPrune(before: arguments.before, force: arguments.force ?? false,
                                                             interaction: interaction))
        }
    }

    public enum AuditPublicKey: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = PublicKeyReport
        public static let operation = DaemonOperation.auditPublicKey
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PublicKeyReport {
            PublicKeyReport(publicKey: try await requests.auditPublicKey())
        }
    }

    public enum AuditShip: OperationSpec {
        public struct Arguments: Codable, Sendable, Equatable {
            /// Root only: forget the fleet checkpoints kept and accept the collector's log.
            public var force: Bool?
            public init(newLog: Bool) { force = newLog ? true : nil }
        }
        public typealias Result = AuditShipmentsReport
        public static let operation = DaemonOperation.auditShip
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<AuditShipmentsReport> {
            Served(AuditShipmentsReport(shipments: try await exchange.shipTrails(newLog: arguments.force ?? false)))
        }
    }

    // MARK: SSH keys

    public enum SshKeygen: ServedOperation {
        public typealias Result = SSHKeyReport
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public var policy: String
            public var fresh: Bool
            /// `ssh-ed25519` (the default) or `ecdsa-sha2-nistp256`.
            public var type: String?
            public init(item: String, policy: String, fresh: Bool, type: String? = nil) {
                self.item = item
                self.policy = policy
                self.fresh = fresh
                self.type = type
            }
        }
        public static let operation = DaemonOperation.sshKeygen
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> SSHKeyReport {
            try await requests.sshKeygen(arguments.item, type: arguments.type ?? "ssh-ed25519", policy: arguments.policy,
                                         fresh: arguments.fresh)
        }
    }

    public enum SshAdd: OperationSpec {
        public struct Arguments: Codable, Sendable, Equatable {
            public var item: String
            public var policy: String
            public var fresh: Bool?
            /// The key's public blob as the client sent it: the key sealed must be its private half.
            public var publicKey: Data
            public init(item: String, policy: String, fresh: Bool, publicKey: Data) {
                self.item = item
                self.policy = policy
                self.fresh = fresh
                self.publicKey = publicKey
            }
        }
        public typealias Result = SSHKeyReport
        public static let operation = DaemonOperation.sshAdd
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<SSHKeyReport> {
            Served(try await requests.sshAdd(arguments.item, publicKey: arguments.publicKey,
                                             seed: { try await exchange.secretValue() }, policy: arguments.policy,
                                             fresh: arguments.fresh ?? false))
        }
    }

    public enum SshList: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = [SSHKeyReport]
        public static let operation = DaemonOperation.sshList
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> [SSHKeyReport] {
            try await requests.sshList()
        }
    }

    public enum SshSign: ServedOperation {
        public typealias Arguments = SSHSignRequest
        public typealias Result = SSHSignatureReport
        public static let operation = DaemonOperation.sshSign
        public static func perform(_ arguments: SSHSignRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> SSHSignatureReport {
            try await requests.sshSign(arguments, interaction: interaction)
        }
    }

    public enum SshOffer: ServedOperation {
        public typealias Arguments = SSHOfferChange
        public typealias Result = [SSHKeyReport]
        public static let operation = DaemonOperation.sshOffer
        public static func perform(_ arguments: SSHOfferChange, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> [SSHKeyReport] {
            try await requests.sshOffer(arguments)
        }
    }

    public enum SshConfirm: ServedOperation {
        public typealias Result = MatchReport
        public struct Arguments: Codable, Sendable, Equatable {
            /// What the agent asks to confirm (`Allow use of key …?`), as it worded it.
            public var question: String
            public init(question: String) { self.question = question }
        }
        public static let operation = DaemonOperation.sshConfirm
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> MatchReport {
            try await requests.sshConfirm(arguments.question, interaction: interaction)
        }
    }

    public enum VerifyUnused: ServedOperation {
        public typealias Result = EmptyReport
        public struct Arguments: Codable, Sendable, Equatable {
            /// How long after the match the prompt ended, in seconds.
            public var secondsAfter: Int
            public init(secondsAfter: Int) { self.secondsAfter = secondsAfter }
        }
        public static let operation = DaemonOperation.verifyUnused
        public static func perform(_ arguments: Arguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
            try await requests.verifyUnused(secondsAfter: arguments.secondsAfter)
            return EmptyReport()
        }
    }

    public enum SshSkEnroll: ServedOperation {
        public typealias Arguments = SSHSecurityKeyEnrollRequest
        public typealias Result = SSHSecurityKeyEnrollment
        public static let operation = DaemonOperation.sshSkEnroll
        public static func perform(_ arguments: SSHSecurityKeyEnrollRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> SSHSecurityKeyEnrollment {
            try await requests.sshSkEnroll(arguments)
        }
    }

    public enum SshSkSign: ServedOperation {
        public typealias Arguments = SSHSecurityKeySignRequest
        public typealias Result = SSHSecurityKeySignature
        public static let operation = DaemonOperation.sshSkSign
        public static func perform(_ arguments: SSHSecurityKeySignRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> SSHSecurityKeySignature {
            try await requests.sshSkSign(arguments, interaction: interaction)
        }
    }

    // MARK: Passkeys

    public enum PasskeyVerify: ServedOperation {
        public typealias Arguments = PasskeyVerifyRequest
        public typealias Result = PasskeyVerification
        public static let operation = DaemonOperation.passkeyVerify
        public static func perform(_ arguments: PasskeyVerifyRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PasskeyVerification {
            try await requests.passkeyVerify(arguments, interaction: interaction)
        }
    }

    public enum PasskeyMake: ServedOperation {
        public typealias Arguments = PasskeyMakeRequest
        public typealias Result = PasskeyMade
        public static let operation = DaemonOperation.passkeyMake
        public static func perform(_ arguments: PasskeyMakeRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PasskeyMade {
            try await requests.passkeyMake(arguments)
        }
    }

    public enum PasskeyAssert: ServedOperation {
        public typealias Arguments = PasskeyAssertRequest
        public typealias Result = PasskeyAssertions
        public static let operation = DaemonOperation.passkeyAssert
        public static func perform(_ arguments: PasskeyAssertRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PasskeyAssertions {
            try await requests.passkeyAssert(arguments)
        }
    }

    public enum PasskeyList: ServedOperation {
        public typealias Arguments = PasskeyListRequest
        public typealias Result = PasskeyListing
        public static let operation = DaemonOperation.passkeyList
        public static func perform(_ arguments: PasskeyListRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PasskeyListing {
            try await requests.passkeyList(arguments)
        }
    }

    public enum PasskeyDelete: ServedOperation {
        public typealias Arguments = PasskeyDeleteRequest
        public typealias Result = PasskeyReport
        public static let operation = DaemonOperation.passkeyDelete
        public static func perform(_ arguments: PasskeyDeleteRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PasskeyReport {
            try await requests.passkeyDelete(arguments, interaction: interaction)
        }
    }

    public enum PasskeyUpdate: ServedOperation {
        public typealias Arguments = PasskeyUpdateRequest
        public typealias Result = PasskeyReport
        public static let operation = DaemonOperation.passkeyUpdate
        public static func perform(_ arguments: PasskeyUpdateRequest, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> PasskeyReport {
            try await requests.passkeyUpdate(arguments)
        }
    }

    public enum PasskeyPrompts: ServedOperation {
        public typealias Arguments = NoArguments
        public typealias Result = EmptyReport
        public static let operation = DaemonOperation.passkeyPrompts
        public static func perform(_ arguments: NoArguments, on requests: any TouchgateRequests,
                                   interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
            try await requests.passkeyPrompts(interaction: interaction)
            return EmptyReport()
        }
    }

    // MARK: Moving in

    public enum Migrate: OperationSpec {
        public struct Arguments: Codable, Sendable, Equatable {
            /// Where the personal store was, for the record.
            public var path: String
            public init(path: String) { self.path = path }
        }
        public typealias Result = MigrationReport
        public static let operation = DaemonOperation.migrate
        /// The two files passed with the request: the database copy, then the audit key.
        public static func serve(_ arguments: Arguments, on requests: any TouchgateRequests,
                                 exchange: any RequestExchange) async throws(ServiceError) -> Served<MigrationReport> {
            let files = exchange.takeDescriptors()
            defer { for file in files { close(file) } }
            guard files.count == 2 else {
                throw ServiceError(.usage, "migrate needs two descriptors (the database copy, then the audit key); "
                                       + "\(files.count) came")
            }
            return Served(try await exchange.adoptMigration(database: files[0], auditKey: files[1], from: arguments.path))
        }
    }
}
