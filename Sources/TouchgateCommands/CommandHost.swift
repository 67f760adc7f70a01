public import TouchgateAPI
import TouchgateTerminal

/// What only a process that opens the store itself can do, given to the commands by the
/// executable that has it: `touchgate-cli` links the service and passes its host;
/// `touchgate-client`, which speaks to touchgated only, passes none, and a command that
/// needs one is handed to `touchgate-cli` with the same arguments (``CommandLineEntry``).
public protocol CommandHost: Sendable {
    /// The process's protections, and whatever the host's libraries need first
    /// (``ProcessProtection/apply()`` at least). Called first thing in `main`.
    func prepare() throws(ServiceError)

    /// This user's own store, served in this process (the personal mode).
    func personal() -> any TouchgateRequests

    /// The personal mode for a process that serves many requests (`touchgate agent`): the
    /// store stays open between them, as touchgated keeps it, instead of being opened,
    /// migrated and synced for each one.
    func longLived() -> any TouchgateRequests

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
}
