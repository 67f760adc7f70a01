public import TouchgateAPI
public import TouchgateSocket
import TouchgateTerminal

/// What only a process that opens the store itself can do, given to the commands by the
/// executable that has it: `touchgate-cli` links the service and passes its host;
/// `touchgate-client`, which speaks to touchgated only, passes none, and a command that
/// needs one is handed to `touchgate-cli` with the same arguments (``CommandLineEntry``).
public protocol CommandHost: Sendable {
    /// The process's protections, and whatever the host's libraries need first
    /// (``ProcessProtection/apply()`` at least). Called first thing in `main`.
    func prepare() throws(ServiceError)

    /// This user's own store, served in this process (the personal mode), behind the
    /// host's gate, for `caller` (a door of this process: the command itself, the agent's
    /// Secret Service when it serves in-process).
    func personal(for caller: Caller) -> any TouchgateRequests

    /// The personal mode hosted by `touchgate agent`: the store kept open between requests,
    /// the unlocked key in the agent's own memory instead of the kernel keyring, and the
    /// same service on `serviceSocket` (touchgated's protocol) for this user's commands.
    /// `log` takes what it reports.
    func personalAgent(serviceSocket: UnixListener, log: @escaping @Sendable (String) -> Void) -> any AgentHosting

    /// Whether the personal store exists yet (a shell completion must not create one).
    var personalStoreExists: Bool { get }

    /// `audit ship` in the personal mode: the trail to the collector that the fleet
    /// configuration at `configurationPath` (default: ``Vocabulary/fleetConfiguration``) names.
    func shipPersonalAudit(configurationPath: String?, newLog: Bool) async throws(ServiceError) -> AuditShipReport

    /// `migrate`: moves the personal store into touchgated (``MigrationTarget``).
    func migrate(into daemon: any MigrationTarget, interaction: any Interaction) async throws(ServiceError)
        -> MigrationReport

    /// `audit verify --public-key`: checks an export, read line by line from `input`
    /// (standard input when nil), against the public key in `publicKeyFile`, offline.
    func checkExport(input: String?, publicKeyFile: String) throws(ServiceError) -> PublicVerificationReport
    /// `receipt verify`: the receipt's signature checked against `publicKey` (hex), offline.
    func checkReceipt(_ receipt: Receipt, publicKey: String) -> ReceiptCheckReport
    /// Every item the Secret Service provider on the bus at `address` holds: details, and
    /// (with `values`) the values packed in the same order (``PackedValues``).
    func readSecretService(address: String, values: Bool) throws(ServiceError) -> (details: [ItemDetails], values: SecretBytes)
    /// Asks the session bus at `address` to read its service files again; whether it did.
    func reloadSessionBus(address: String) -> Bool
    /// A Secret Service provider over `requests`, reporting its events and notices to `report`.
    func secretService(requests: @escaping RequestsForCaller,
                       report: @escaping @Sendable (InteractionEvent) -> Void) -> any SecretServiceHosting
}

/// The personal store as `touchgate agent` hosts it (``CommandHost/personalAgent(serviceSocket:log:)``).
/// The Secret Service on the session bus, which only touchgate-cli links (GIO): started by
/// `touchgate agent --secret-service` and `touchgate secret-service serve`.
public protocol SecretServiceHosting: Sendable {
    /// Connects to the bus at `address` and takes `org.freedesktop.secrets`, unless another
    /// program owns it (``SecretServiceStart/taken(by:)`` says which).
    func start(address: String) throws(ServiceError) -> SecretServiceStart
    /// Whether it still serves (its bus is still there).
    var isServing: Bool { get }
    /// Leaves the bus.
    func stop()
}

public protocol AgentHosting: Sendable {
    /// The service, with the key in this process's memory, behind the host's gate, for
    /// what a door of the agent found of its caller.
    var requests: RequestsForCaller { get }
    /// Moves an unlocked key from the kernel keyring into this process: true when one was moved.
    func takeOverKeyringKey() async -> Bool
    /// Serves the service socket until ``stop()``.
    func serve() async
    /// Stops serving; the held key is forgotten when ``serve()`` returns.
    func stop()
}
