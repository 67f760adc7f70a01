import FoundationEssentials
import Synchronization
public import TouchgateService
import TouchgateSocket
public import TouchgateVault
import TouchgateAPI

/// Turns one protocol request into one call of the service, for the caller who sent it.
///
/// Who acts is the caller the connection was made by (its uid from `SO_PEERCRED`), never
/// anything the request says. Nothing is decided here: ``ServiceGate`` applies who may ask
/// for what and for whom, every other rule is the use case's in ``TouchgateService``. This
/// only decodes the arguments, calls, and encodes.
struct RequestHandler: Sendable {
    /// Where each user's store lives, and the held keys.
    let stores: DaemonStores
    /// The service's rules around each request.
    let gate: ServiceGate

    init(stores: DaemonStores, sessions: LocalSessionRule) {
        self.stores = stores
        gate = ServiceGate(services: { [stores] in stores.service(for: $0) }, principals: { [stores] in stores.principals() },
                           sessions: sessions, soleUser: stores.personal?.principal.uid)
    }

    /// Runs `request` (a request with an operation) and returns its result or failure, to send.
    func respond(to request: ClientMessage, frame: Frame, caller: Caller, interaction: DaemonInteraction) async -> Reply {
        let arguments = request.arguments ?? RequestArguments()
        var caller = caller
        caller.requester = arguments.requester
        do {
            let operation = request.operation!
            return try await gate.serve(operation, caller: caller, namedUser: arguments.user,
                                        localOnly: arguments.localOnly == true) { service in
                try await run(Operations.spec(operation), frame, service: service, caller: caller, namedUser: arguments.user,
                              interaction: interaction)
            }
        } catch {
            var failure = DaemonMessage(kind: .failure, id: request.id)
            if error is CancellationError || (error as? ServiceError)?.code == .cancelled,
               let interruption = ReaderTurns.request?.interruption {
                // Its turn was ended under it (sleep, the seat's user, its share spent): that is why.
                failure.error = interruption
            } else {
                failure.error = error as? ServiceError
                    ?? (error is CancellationError ? .cancelled : ServiceError(.error, String(describing: error)))
            }
            return Reply(line: DaemonProtocol.encode(failure), secret: nil)
        }
    }

    /// A reply: the result line and the secret bytes that follow it.
    struct Reply {
        let line: [UInt8]
        let secret: SecretBytes?
    }

    private func reply<R: Codable & Sendable>(_ id: UInt64, _ report: R, secret: SecretBytes? = nil) -> Reply {
        Reply(line: DaemonProtocol.encode(ResultMessage(id: id, result: report, secretLength: secret?.count)),
              secret: secret)
    }

    /// Runs `spec` on `service` from the table, with what this door carries beside the
    /// arguments (``DaemonExchange``), and encodes its result.
    private func run<Spec: OperationSpec>(_ spec: Spec.Type, _ frame: Frame, service: TouchgateService, caller: Caller,
                                          namedUser: String?, interaction: DaemonInteraction) async throws -> Reply {
        let exchange = DaemonExchange(interaction: interaction, frame: frame, handler: self, service: service, caller: caller,
                                      namedUser: namedUser)
        let served = try await Spec.serve(try Self.ownArguments(Spec.self, frame), on: service, exchange: exchange)
        // A locked vault's store need not stay open either.
        if Spec.operation == .lock { stores.open.forget(service.location) }
        if served.secret == nil, !Spec.operation.contract.writesRecords,
           let report = served.result as? any (Encodable & Equatable) {
            let key = "\(service.principal.uid) \(Spec.operation.rawValue)"
            return Reply(line: DaemonProtocol.resultLine(id: interaction.id, report: stores.answers.encoded(report, key: key)),
                         secret: nil)
        }
        return reply(interaction.id, served.result, secret: served.secret)
    }

    /// The operation's own arguments of the request in `frame`: a usage error naming what is
    /// missing or malformed, never a guess.
    static func ownArguments<Spec: OperationSpec>(_ spec: Spec.Type, _ frame: Frame) throws(ServiceError) -> Spec.Arguments {
        if let none = NoArguments() as? Spec.Arguments { return none }
        do {
            if let decoded = try frame.decode(OwnArguments<Spec.Arguments>.self).arguments { return decoded }
            // No arguments object: fine when every argument is optional.
            return try DaemonProtocol.decode(Spec.Arguments.self, from: Array("{}".utf8))
        } catch {
            throw ServiceError(.usage, "the arguments of \(Spec.operation.rawValue): \(error)")
        }
    }

    /// `migrate`: the caller's own personal store, passed as two open files, becomes its
    /// store here. Only for the caller itself: no user is named, and root moves root's.
    fileprivate func migrate(database: Int32, auditKey: Int32, from path: String, service: TouchgateService,
                             caller: Caller, interaction: DaemonInteraction) async throws(ServiceError) -> MigrationReport {
        guard stores.personal == nil else {
            throw ServiceError(.usage, "touchgate agent serves your personal store; migrate moves a personal store into "
                               + "touchgated, the system daemon")
        }
        // The directory is replaced: whatever was kept open there is not the store afterwards.
        stores.open.forget(service.location)
        defer { stores.open.forget(service.location) }
        return try await service.adoptMigration(database: database, auditKey: auditKey, from: path,
                                                peer: caller.description, interaction: interaction)
    }

    /// `audit.ship`: the caller's trail, or for root every user's, to this daemon's collector.
    fileprivate func ship(newLog: Bool, service: TouchgateService, caller: Caller,
                          namedUser: String?) async throws(ServiceError) -> [AuditShipReport] {
        guard let fleet = stores.fleet else {
            throw ServiceError(.notFound, "this touchgated does not ship audit trails (started without fleet shipping)")
        }
        let services = try gate.trailsToShip(for: caller, namedUser: namedUser, service: service, newLog: newLog)
        return try await fleet.ship(services, newLog: newLog)
    }

    /// Sends one `output` line of a stream, waiting (on the caller's own thread) while the
    /// client is slow; throws `CancellationError` once the connection is gone, ending the stream.
    fileprivate static func output(_ text: String, id: UInt64, on socket: FramedSocket) throws {
        var output = DaemonMessage(kind: .output, id: id)
        output.text = text
        guard socket.sendBlockingWhenRoom(output) else { throw CancellationError() }
    }
}

/// What one request on touchgated's socket carries beside its arguments: the secret value
/// that follows it, the descriptors passed with it, its stream of `output` lines, a second
/// party for a new passphrase, and the daemon's own work (shipping, migration).
private struct DaemonExchange: RequestExchange {
    let daemonInteraction: DaemonInteraction
    let frame: Frame
    let handler: RequestHandler
    let service: TouchgateService
    let caller: Caller
    let namedUser: String?

    init(interaction: DaemonInteraction, frame: Frame, handler: RequestHandler, service: TouchgateService, caller: Caller,
         namedUser: String?) {
        daemonInteraction = interaction
        self.frame = frame
        self.handler = handler
        self.service = service
        self.caller = caller
        self.namedUser = namedUser
    }

    var interaction: any Interaction { daemonInteraction }

    func secretValue() async throws -> SecretBytes { try await daemonInteraction.secretValue() }

    func newPassphraseParty(canAskAgain: Bool) -> any Interaction {
        DaemonInteraction(socket: daemonInteraction.socket, id: daemonInteraction.id, answers: daemonInteraction.answers,
                          canAskAgain: canAskAgain, assumeYes: false, answerTimeout: daemonInteraction.answerTimeout)
    }

    func output(_ line: String) throws {
        try RequestHandler.output(line, id: daemonInteraction.id, on: daemonInteraction.socket)
    }

    /// On a thread of their own, as the export does: waiting for a slow reader holds no shared thread.
    func output(lines: [String]) async throws {
        let (socket, id) = (daemonInteraction.socket, daemonInteraction.id)
        try await OwnThread.run {
            for line in lines { try RequestHandler.output(line, id: id, on: socket) }
        }
    }

    func takeDescriptors() -> [Int32] { frame.descriptors?.take() ?? [] }

    func shipTrails(newLog: Bool) async throws(ServiceError) -> [AuditShipReport] {
        try await handler.ship(newLog: newLog, service: service, caller: caller, namedUser: namedUser)
    }

    func adoptMigration(database: Int32, auditKey: Int32, from path: String) async throws(ServiceError) -> MigrationReport {
        try await handler.migrate(database: database, auditKey: auditKey, from: path, service: service, caller: caller,
                                  interaction: daemonInteraction)
    }
}

/// Each user's store under the daemon's state directory, and the keys it holds.
struct DaemonStores: Sendable {
    /// The state directory (`/var/lib/touchgate`).
    let directory: URL
    /// The one store served instead of every user's, when touchgate agent hosts its user's
    /// personal store.
    var personal: PersonalStore?
    let keys: HeldKeys
    /// The readers held open across requests, shared by every user's service.
    let pool: ReaderPool
    /// Each user's store kept open across requests.
    let open: OpenStores
    /// Disk space set aside for `secret rm` and `lock` on a full disk.
    var reserve: SpaceReserve?
    /// Where the trails are shipped, when the daemon ships them.
    let fleet: FleetShipping?
    /// Each user's store location, made once.
    let locations = StoreLocations()
    /// The last answer to each user's reads, encoded.
    let answers = EncodedAnswers()
    /// When the `auto` reader backend last found no fprintd, for every user's service.
    let fprintdAbsence = FprintdAbsence()

    /// The service of every user with a store here, by uid (the daemon's own shipments).
    func everyService() -> [TouchgateService] {
        principals().map(service(for:)).filter(\.hasStore)
    }

    /// Every principal with a store here, by uid.
    func principals() -> [Principal] {
        if let personal { return [personal.principal] }
        let users = directory.appendingPathComponent("users")
        let uids = ((try? FileManager.default.contentsOfDirectory(atPath: users.path)) ?? []).compactMap(UInt32.init).sorted()
        return uids.map { Principal(uid: $0, loginName: UserDatabase.loginName(of: $0)) }
    }

    /// The service of `principal` over its store here.
    func service(for principal: Principal) -> TouchgateService {
        let keys = self.keys
        if let personal {
            // The agent's own user's store: its door admits no other uid and the gate lets no
            // one name another user. The reader stays open between requests for a while (the
            // agent's pool lingers), then other programs can use it.
            var service = TouchgateService(principal: personal.principal, location: personal.location, mode: .personal,
                                           custody: { keys.custody(for: $0) })
            service.readerPool = pool
            service.openStores = open
            service.hostedByAgent = true
            service.fprintdAbsence = fprintdAbsence
            return service
        }
        let location = locations.location(of: principal.uid, under: directory)
        var service = TouchgateService(principal: principal, location: location, mode: .system,
                                       custody: { keys.custody(for: $0) })
        service.readerPool = pool
        service.openStores = open
        service.fprintdAbsence = fprintdAbsence
        service.spaceReserve = reserve
        return service
    }
}

/// The personal store touchgate agent hosts: its user and where the store is.
public struct PersonalStore: Sendable {
    public let principal: Principal
    public let location: StoreLocation

    public init(principal: Principal, location: StoreLocation) {
        self.principal = principal
        self.location = location
    }
}

/// Each user's store location under the state directory, made once: building the paths
/// with Foundation's URLs was a tenth of a `status` request's time.
final class StoreLocations: Sendable {
    private let known = Mutex<[UInt32: StoreLocation]>([:])

    /// `users/UID` under `directory`, with the machine's one signing key in `directory`:
    /// its public half, registered once, verifies every trail here.
    func location(of uid: UInt32, under directory: URL) -> StoreLocation {
        if let location = known.withLock({ $0[uid] }) { return location }
        let location = StoreLocation(directory: directory.appendingPathComponent("users").appendingPathComponent(String(uid)),
                                     signingKeyDirectory: directory)
        known.withLock { $0[uid] = location }
        return location
    }
}

/// The last report each user's read-only operations (`status`, `secret.list`, …) answered,
/// with its encoding: the same report again, as a user's repeated `status` mostly is, is
/// not encoded again (measured: encoding was a fifth of touchgated's time per `status`).
/// Only reports, never secrets (released values travel beside the line, not in it).
final class EncodedAnswers: Sendable {
    /// A report kept: `@unchecked Sendable` because only an operation's `Result`, which the
    /// table requires to be `Sendable`, is kept (a cast cannot ask for `Sendable`).
    private struct Kept: @unchecked Sendable {
        let report: Any
        let encoded: [UInt8]
    }

    private let last = Mutex<[String: Kept]>([:])

    /// `report` encoded as ``WireCoding/line(_:)`` does; `key` names whose answer to what.
    func encoded<Report: Encodable & Equatable>(_ report: Report, key: String) -> [UInt8] {
        if let known = last.withLock({ $0[key] }), let same = known.report as? Report, same == report {
            return known.encoded
        }
        let encoded = Array(WireCoding.line(report).utf8)
        last.withLock { $0[key] = Kept(report: report, encoded: encoded) }
        return encoded
    }
}
