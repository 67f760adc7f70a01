import FoundationEssentials
package import TouchgatePolicy
public import TouchgateVault
public import TouchgateAPI

/// Every Touchgate use case, for one principal over one data directory.
///
/// This is the only place that decides anything: who may release a secret, when a touch
/// is needed, what is counted and audited. The CLI and the daemon only adapt it: they
/// parse a request, supply an ``Interaction`` for prompts and the passphrase, and render
/// the typed result or the ``ServiceError``.
///
/// Each use case opens the store for its own duration (or takes it from ``openStores``),
/// so values are cheap to keep and safe to share across tasks. Use cases never read the process's identity: the
/// ``principal`` is who acts.
public struct TouchgateService: Sendable {
    /// Who acts.
    public let principal: Principal
    /// The data directory.
    public let location: StoreLocation
    /// Where unlocked vault keys wait.
    let custody: @Sendable (Vault) -> any KeyCustody
    /// Throws when ``custody`` could not hold a key now: checked before a vault is made,
    /// so that `init` does not make one it then cannot leave unlocked.
    let custodyCheck: @Sendable () throws -> Void
    /// Which process this service runs in: the user's own (personal) or touchgated (system).
    public let mode: ServiceMode
    /// How to reach the reader: `auto`, `libfprint` or `fprintd` (see ``ReaderBackendChoice``);
    /// `TOUCHGATE_READER_BACKEND` by default.
    public var readerBackendSetting: String? = Invocation.environment(ReaderBackendChoice.environmentVariable)
    /// The fewest years audit records are kept: ``AuditRetention/configuredYears`` (six,
    /// or more where root asked for more); a smaller value counts as six.
    public var auditRetentionYears: Int = AuditRetention.configuredYears
    /// How much the principal may store, in the system mode (touchgated); nil in the personal
    /// mode, whose store is on the user's own disk.
    public var itemQuota: ItemQuota?
    /// The readers a long-lived process keeps open across requests (touchgated's); nil:
    /// each request opens the reader it needs and closes it at the end (the personal mode).
    /// Used only when the reader is reached directly, never while fprintd owns it.
    public var readerPool: ReaderPool?
    /// Where a long-lived process remembers that the `auto` backend found no fprintd.
    public var fprintdAbsence: FprintdAbsence?
    /// The stores a long-lived process keeps open across requests (touchgated's); nil:
    /// each use case opens the store and closes it at the end (the personal mode).
    public var openStores: OpenStores?
    /// How use cases reach a reader for a touch or an enrollment; nil: libfprint's readers
    /// (from ``readerPool`` when there is one), or fprintd as the backend setting says. Tests
    /// set a scripted reader (which leaves fprintd out).
    package var readerPort: (any ReaderPort)?
    /// The source of time for every policy decision (lockout, reuse window, idle lock).
    package var clock: any PolicyClock = SystemClock()
    /// Disk space a long-lived process sets aside for `secret rm` and `lock` on a full
    /// disk (touchgated's); nil: none.
    public var spaceReserve: SpaceReserve?
    /// Whether touchgate agent hosts this personal store, with the unlocked key in its own
    /// memory (what `status` says it protects against).
    public var hostedByAgent = false
    /// Who asks, as the host's gate admitted them (``ServiceGate``): every record the
    /// request writes names this caller, through the store handle opened for it. Nil for a
    /// service used by its own process's user with no gate (tests, tools).
    public internal(set) var caller: Caller?

    /// A service for `principal` over `location`, keeping unlocked keys in the kernel keyring.
    public init(principal: Principal, location: StoreLocation) {
        self.init(principal: principal, location: location, custody: { KernelKeyringCustody(vault: $0) },
                  custodyCheck: { try VaultSession.checkKeyringUsable() })
    }

    /// A service for `principal` over `location`, keeping unlocked keys where `custody`
    /// says (one custody per vault; a daemon keeps them in its own memory).
    public init(principal: Principal, location: StoreLocation, mode: ServiceMode = .personal,
                custody: @escaping @Sendable (Vault) -> any KeyCustody,
                custodyCheck: @escaping @Sendable () throws -> Void = {}) {
        self.principal = principal
        self.location = location
        self.mode = mode
        self.custody = custody
        self.custodyCheck = custodyCheck
        itemQuota = mode == .system ? ItemQuota() : nil
    }

    /// The personal (in-process) mode: this process's user, `$XDG_DATA_HOME/touchgate`,
    /// the kernel keyring.
    public static func personal() -> TouchgateService {
        TouchgateService(principal: .current(), location: .fromEnvironment())
    }

    /// Opens the store and runs `body`, translating every error to a ``ServiceError``.
    func withStore<T>(_ body: (StoreAccess) async throws -> T) async throws(ServiceError) -> T {
        try await serviceErrors(storeIn: location.directory.path) {
            var access: StoreAccess
            let client = caller?.auditClient
            if let (database, prepared) = try openStores?.database(at: location) {
                access = StoreAccess(database: database.serving(client), principal: principal, custody: custody, clock: clock)
                access.keepsSnapshots = true
                access.prepared = prepared
            } else {
                access = StoreAccess(database: try TouchgateDatabase(location: location).serving(client), principal: principal,
                                     custody: custody, clock: clock)
            }
            return try await body(access)
        }
    }

    /// Runs `body` on the store only if one exists, else throws `missing`: a request that
    /// changes nothing (a touch, a release, an unlock) must not leave a store behind for a
    /// user who never made one. A PAM stack asks about everyone who logs in.
    func withExistingStore<T>(orElse missing: @autoclosure () -> ServiceError,
                              _ body: (StoreAccess) async throws -> T) async throws(ServiceError) -> T {
        guard hasStore else { throw missing() }
        return try await withStore(body)
    }

    /// The port to the readers (``readerPort``, or libfprint's).
    var readers: any ReaderPort { readerPort ?? LibfprintReaders(pool: readerPool) }

    /// Whether the principal has a store at all (anything enrolled or initialized, ever).
    public var hasStore: Bool { FileManager.default.fileExists(atPath: location.databasePath) }

    /// The refusal for a request that needs a vault, when there is none.
    var noVault: ServiceError {
        ServiceError.from(VaultError.notInitialized(directory: location.directory.path))
    }

    /// Checks a name given for something to store.
    static func checkName(_ name: String, what: String) throws {
        if let problem = StoredText.problem(withName: name, what: what) { throw ServiceError.usage(problem) }
    }

    /// `name` as a new item is stored under it: Unicode NFC, so that `café` typed composed
    /// or decomposed is one name (SQLite compares names byte for byte, Swift by canonical
    /// equivalence). The checks of ``StoredText`` run on this form. The standard library's
    /// NFC (Foundation's `precomposedStringWithCanonicalMapping` is not in FoundationEssentials).
    static func storedName(_ name: String) -> String {
        String(decoding: name._nfcCodeUnits, as: UTF8.self)
    }

    /// Whether two names are the same bytes (`==` on `String` ignores the spelling).
    static func sameBytes(_ first: String, _ second: String) -> Bool {
        first.utf8.elementsEqual(second.utf8)
    }
}

extension TouchgateService {
    /// Process-wide protections for any program that handles secrets: no core dumps, no
    /// ptrace by the same user, fatal signals that wipe secret memory and exit at once.
    /// Call it first thing in `main`, before anything is read.
    public static func hardenProcess() throws(ServiceError) {
        try ProcessHardening.harden()
    }
}
