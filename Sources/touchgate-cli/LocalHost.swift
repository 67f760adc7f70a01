import FoundationEssentials
import TouchgateAPI
import TouchgateCommands
import TouchgateDaemon
import TouchgateSocket
import Logging
import TouchgateFleet
import TouchgateService
import TouchgateShipping
import TouchgateSecretService
import TouchgateVault
#if canImport(Glibc)
import Glibc
#endif

/// What `touchgate-cli` can do because it links the service: the personal mode in this
/// process, the fleet shipping of a personal trail, `migrate`, and offline export checks.
struct LocalHost: CommandHost {
    /// This user's own store, served in this process: the one every command of the personal
    /// mode uses.
    private let service: TouchgateService
    /// The gate in front of it: every door of this process reaches the service through it.
    private let gate: ServiceGate

    init() {
        let service = TouchgateService.personal()
        self.service = service
        gate = ServiceGate(services: { _ in service }, principals: { [service.principal] },
                           sessions: LocalSessionRule(logger: Logger(label: "touchgate") { _ in SwiftLogNoOpLogHandler() }),
                           soleUser: service.principal.uid)
    }

    func prepare() throws(ServiceError) {
        try TouchgateService.hardenProcess()
    }

    func personal(for caller: Caller) -> any TouchgateRequests {
        GatedRequests(gate: gate, caller: caller, mode: service.mode)
    }

    /// Runs a host operation (`audit ship`, `migrate`) through the gate, for this process.
    private func gated<T: Sendable>(_ operation: DaemonOperation,
                                    _ use: (TouchgateService) async throws(ServiceError) -> T) async throws(ServiceError) -> T {
        try await GatedRequests(gate: gate, caller: .thisProcess(), mode: service.mode).gated(operation, use)
    }

    func personalAgent(serviceSocket: UnixListener, log: @escaping @Sendable (String) -> Void) -> any AgentHosting {
        let logger = Logger(label: "touchgate-agent") { _ in ForwardingLogHandler(log: log) }
        // The hello names the store by its directory, which a new user's first command (the one
        // that started this agent through its socket) finds made; a directory that cannot be
        // made or is not private names no store, and the commands meet the reason in-process.
        _ = try? service.location.prepare()
        return PersonalAgent(daemon: Daemon(personal: PersonalStore(principal: service.principal, location: service.location),
                                            listener: serviceSocket, logger: logger))
    }

    var personalStoreExists: Bool {
        FileManager.default.fileExists(atPath: service.location.databasePath)
    }

    func shipPersonalAudit(configurationPath: String?, newLog: Bool) async throws(ServiceError) -> AuditShipReport {
        let configuration = try FleetConfiguration.load(path: configurationPath ?? FleetConfiguration.defaultPath)
        let collector = PostgresCollector(configuration: configuration)
        defer { collector.close() }
        return try await gated(.auditShip) { service throws(ServiceError) in
            try await service.shipAudit(to: collector, configuration: configuration, newLog: newLog)
        }
    }

    func migrate(into daemon: any MigrationTarget, interaction: any Interaction) async throws(ServiceError)
        -> MigrationReport
    {
        try await gated(.migrate) { service throws(ServiceError) in try await service.migrate(into: daemon, interaction: interaction) }
    }

    /// Reads the export line by line and checks it.
    func checkReceipt(_ receipt: Receipt, publicKey: String) -> ReceiptCheckReport {
        TouchgateService.checkReceipt(receipt, publicKey: publicKey)
    }

    func checkExport(input: String?, publicKeyFile: String) throws(ServiceError) -> PublicVerificationReport {
        var check = PublicAuditCheck(publicKey: try PublicAuditCheck.publicKey(fromFile: publicKeyFile))
        let stream: UnsafeMutablePointer<FILE>? = input.map { fopen($0, "r") } ?? fdopen(0, "r")
        guard let stream else {
            throw ServiceError(.usage, "cannot open \(StoredText.escaped(input ?? "-")): "
                                     + String(cString: strerror(errno)))
        }
        defer { fclose(stream) }
        // Line by line, each at most PublicAuditCheck.maximumLineBytes: a file with no end or
        // no newline (/dev/zero) is refused, not read into memory whole.
        var chunk = [UInt8](repeating: 0, count: 65536)
        var line: [UInt8] = []
        var lines = 0
        func take(_ bytes: ArraySlice<UInt8>) throws(ServiceError) {
            line += bytes
            guard line.count <= PublicAuditCheck.maximumLineBytes else {
                throw ServiceError(.usage, "line \(lines + 1) of \(StoredText.escaped(input ?? "the input")) is longer "
                                   + "than \(PublicAuditCheck.maximumLineBytes) bytes: this is not an export of "
                                   + "`touchgate audit export`")
            }
        }
        while case let count = fread(&chunk, 1, chunk.count, stream), count > 0 {
            var start = 0
            while let newline = chunk[start..<count].firstIndex(of: UInt8(ascii: "\n")) {
                try take(chunk[start...newline])
                lines += 1
                try check.feed(String(decoding: line, as: UTF8.self))
                line.removeAll(keepingCapacity: true)
                start = newline + 1
            }
            try take(chunk[start..<count])
        }
        if !line.isEmpty { try check.feed(String(decoding: line, as: UTF8.self)) }
        return try check.finish()
    }
}

/// touchgate agent's host of the personal store: touchgated's code for one user.
extension LocalHost {
    func secretService(requests: @escaping RequestsForCaller,
                       report: @escaping @Sendable (InteractionEvent) -> Void) -> any SecretServiceHosting {
        HostedSecretService(provider: SecretServiceProvider(requests: requests, report: report))
    }

    func reloadSessionBus(address: String) -> Bool {
        SessionBus.reloadConfiguration(address: address)
    }

    func readSecretService(address: String, values: Bool) throws(ServiceError) -> (details: [ItemDetails], values: SecretBytes) {
        try SecretServiceReader.read(address: address, values: values)
    }
}

/// The provider, as the commands start and stop it.
struct HostedSecretService: SecretServiceHosting {
    let provider: SecretServiceProvider
    func start(address: String) throws(ServiceError) -> SecretServiceStart { try provider.start(address: address) }
    var isServing: Bool { provider.isServing }
    func stop() { provider.stop() }
}

struct PersonalAgent: AgentHosting {
    let daemon: Daemon

    var requests: RequestsForCaller { { [daemon] caller in daemon.requests(for: caller) } }

    func takeOverKeyringKey() async -> Bool { await daemon.takeOverKeyringKey() }

    func serve() async { await daemon.run() }

    func stop() { daemon.stop() }
}

/// The agent's log: what the hosted service reports, handed to the agent's console.
struct ForwardingLogHandler: LogHandler {
    let log: @Sendable (String) -> Void
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        log(event.message.description)
    }
}
