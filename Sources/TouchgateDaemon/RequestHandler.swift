import Foundation
import TouchgateService
import TouchgateSocket
import TouchgateVault
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
                           sessions: sessions)
    }

    /// Runs `request` (a request with an operation) and returns its result or failure, to send.
    func respond(to request: ClientMessage, descriptors: PassedDescriptors? = nil, caller: Caller,
                 interaction: DaemonInteraction) async -> Reply {
        let arguments = request.arguments ?? RequestArguments()
        var caller = caller
        caller.requester = arguments.requester
        do {
            let operation = request.operation!
            return try await gate.serve(operation, caller: caller, namedUser: arguments.user,
                                        localOnly: arguments.localOnly == true) { service in
                if operation == .migrate {
                    return try await migrate(arguments, descriptors, service: service, caller: caller,
                                             interaction: interaction)
                }
                return try await run(operation, arguments, service: service, caller: caller, interaction: interaction)
            }
        } catch {
            var failure = DaemonMessage(kind: .failure, id: request.id)
            if error is CancellationError || (error as? ServiceError)?.code == .cancelled,
               ReaderTurns.request?.wasInterruptedForSleep == true {
                failure.error = ReaderTurns.sleepError
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

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private func run(_ operation: DaemonOperation, _ arguments: RequestArguments, service: TouchgateService,
                     caller: Caller, interaction: DaemonInteraction) async throws -> Reply {
        let id = interaction.id
        switch operation {
        case .status:
            return reply(id, try await service.status())
        case .initialize:
            return reply(id, try await service.initialize(stretching: try stretching(arguments) ?? .moderate,
                                                          interaction: interaction))
        case .unlock:
            return reply(id, try await service.unlock(onlyIfDue: arguments.onlyIfDue ?? false, interaction: interaction))
        case .lock:
            // A locked vault's store need not stay open either.
            defer { stores.open.forget(service.location) }
            return reply(id, try await service.lock())
        case .changePassphrase:
            let new = DaemonInteraction(socket: interaction.socket, id: id, answers: interaction.answers,
                                        canAskAgain: arguments.newCanAskAgain ?? false, assumeYes: false,
                                        answerTimeout: interaction.answerTimeout)
            try await service.changePassphrase(stretching: try stretching(arguments), current: interaction, new: new)
            return reply(id, EmptyReport())
        case .enroll:
            let finger = try required(arguments.finger, "finger")
            return reply(id, try await service.enroll(finger: finger, user: nil, replace: arguments.replace ?? false,
                                                      device: arguments.device, interaction: interaction))
        case .prints:
            return reply(id, try await service.printList(user: arguments.user, device: arguments.device,
                                                         interaction: interaction))
        case .deleteOrphans:
            return reply(id, try await service.deleteOrphans(device: arguments.device, interaction: interaction))
        case .deletePrint:
            let finger = try required(arguments.finger, "finger")
            return reply(id, try await service.deletePrint(finger: finger, user: nil, device: arguments.device,
                                                           interaction: interaction))
        case .clearReader:
            return reply(id, try await service.clearReader(device: arguments.device, interaction: interaction))
        case .importFprintd:
            let from = try required(arguments.path, "path")
            return reply(id, try await service.importFromFprintd(user: nil, from: from, dryRun: arguments.dryRun ?? false,
                                                                 interaction: interaction))
        case .verify:
            return reply(id, try await service.verify(user: nil, finger: arguments.finger, device: arguments.device,
                                                      interaction: interaction))
        case .identify:
            return reply(id, try await service.identify(device: arguments.device, interaction: interaction))
        case .readers:
            return reply(id, try await service.listReaders())
        case .capture:
            throw ServiceError(.usage, "capture is never served here (CallerRules.admit refuses it)")
        case .settings:
            return reply(id, try await service.settings())
        case .changeSettings:
            let change = SettingsChange(lockoutThreshold: arguments.lockoutThreshold,
                                        lockoutDurationSeconds: arguments.lockoutDurationSeconds,
                                        sessionTimeoutSeconds: arguments.sessionTimeoutSeconds,
                                        idleTimeoutSeconds: arguments.idleTimeoutSeconds)
            return reply(id, try await service.changeSettings(change, interaction: interaction))
        case .repair:
            return reply(id, try await service.repair(interaction: interaction))
        case .release:
            let name = try required(arguments.item, "item")
            let value = try await service.release(name, touchNow: arguments.fresh ?? false, device: arguments.device,
                                                  interaction: interaction)
            return reply(id, EmptyReport(), secret: value)
        case .store:
            let name = try required(arguments.item, "item")
            let policy = try required(arguments.policy, "policy")
            return reply(id, try await service.store(name, value: { try await interaction.secretValue() }, policy: policy,
                                                     fresh: arguments.fresh ?? false, replace: arguments.replace ?? false,
                                                     device: arguments.device, interaction: interaction))
        case .items:
            return reply(id, try await service.items())
        case .remove:
            let name = try required(arguments.item, "item")
            try await service.remove(name, interaction: interaction)
            return reply(id, EmptyReport())
        case .auditRecords:
            // One output line per record, as fast as the client reads them: any length of
            // trail, never one line past the protocol's limit; waiting for a slow reader on a
            // thread of its own, as the export does.
            let records = try await service.auditRecords(arguments.filter ?? AuditFilter())
            let socket = interaction.socket
            try await OwnThread.run {
                for record in records { try Self.output(WireCoding.line(record), id: id, on: socket) }
            }
            return reply(id, CountReport(count: records.count))
        case .auditCount:
            return reply(id, CountReport(count: try await service.auditRecordCount(arguments.filter ?? AuditFilter())))
        case .verifyAudit:
            return reply(id, CountReport(count: try await service.verifyAudit()))
        case .exportAudit:
            let socket = interaction.socket
            guard let format = AuditExportFormat(rawValue: arguments.format ?? "json") else {
                throw ServiceError(.usage, "unknown audit export format; use json, ocsf or ecs")
            }
            // The export runs on a thread of its own, so waiting here for a slow reader holds no
            // shared thread; a reader that stops reading is cut off, which ends the export.
            let count = try await service.exportAudit(arguments.filter ?? AuditFilter(), format: format) { text in
                try Self.output(text, id: id, on: socket)
            }
            return reply(id, CountReport(count: count))
        case .migrate:
            throw ServiceError(.usage, "migrate needs the descriptors of its request")
        case .auditPublicKey:
            return reply(id, PublicKeyReport(publicKey: try await service.auditPublicKey()))
        case .shipAudit:
            guard let fleet = stores.fleet else {
                throw ServiceError(.notFound, "this touchgated does not ship audit trails (started without fleet shipping)")
            }
            let newLog = arguments.force ?? false
            let services = try gate.trailsToShip(for: caller, namedUser: arguments.user, service: service, newLog: newLog)
            return reply(id, AuditShipmentsReport(shipments: try await fleet.ship(services, newLog: newLog)))
        case .pruneAudit:
            let before = try required(arguments.before, "before")
            return reply(id, CountReport(count: try await service.pruneAudit(before: before, force: arguments.force ?? false,
                                                                              interaction: interaction)))
        }
    }

    /// `migrate`: the peer's own personal store, passed as two open files, becomes its
    /// store here. Only for the peer itself: no user is named, and root moves root's.
    private func migrate(_ arguments: RequestArguments, _ descriptors: PassedDescriptors?, service: TouchgateService,
                         caller: Caller, interaction: DaemonInteraction) async throws -> Reply {
        let from = try required(arguments.path, "path")
        let files = descriptors?.take() ?? []
        defer { for file in files { close(file) } }
        guard files.count == 2 else {
            throw ServiceError(.usage, "migrate needs two descriptors (the database copy, then the audit key); "
                                   + "\(files.count) came")
        }
        // The directory is replaced: whatever was kept open there is not the store afterwards.
        stores.open.forget(service.location)
        defer { stores.open.forget(service.location) }
        let report = try await service.adoptMigration(database: files[0], auditKey: files[1], from: from,
                                                      peer: caller.description, interaction: interaction)
        return reply(interaction.id, report)
    }

    /// Sends one `output` line of a stream, waiting (on the caller's own thread) while the
    /// client is slow; throws `CancellationError` once the connection is gone, ending the stream.
    private static func output(_ text: String, id: UInt64, on socket: FramedSocket) throws {
        var output = DaemonMessage(kind: .output, id: id)
        output.text = text
        guard socket.sendBlockingWhenRoom(output) else { throw CancellationError() }
    }

    private func required<T>(_ value: T?, _ name: String) throws(ServiceError) -> T {
        guard let value else { throw ServiceError(.usage, "the request lacks '\(name)'") }
        return value
    }

    private func stretching(_ arguments: RequestArguments) throws(ServiceError) -> KeyStretching? {
        guard let text = arguments.stretching else { return nil }
        guard let stretching = KeyStretching(rawValue: text) else {
            throw ServiceError(.usage, "unknown key stretching '\(StoredText.escaped(text))'")
        }
        return stretching
    }
}

/// Each user's store under the daemon's state directory, and the keys it holds.
struct DaemonStores: Sendable {
    /// The state directory (`/var/lib/touchgate`).
    let directory: URL
    let keys: HeldKeys
    /// The readers held open across requests, shared by every user's service.
    let pool: ReaderPool
    /// Each user's store kept open across requests.
    let open: OpenStores
    /// Disk space set aside for `secret rm` and `lock` on a full disk.
    var reserve: SpaceReserve?
    /// Where the trails are shipped, when the daemon ships them.
    let fleet: FleetShipping?

    /// The service of every user with a store here, by uid (the daemon's own shipments).
    func everyService() -> [TouchgateService] {
        principals().map(service(for:)).filter(\.hasStore)
    }

    /// Every principal with a store here, by uid.
    func principals() -> [Principal] {
        let users = directory.appendingPathComponent("users")
        let uids = ((try? FileManager.default.contentsOfDirectory(atPath: users.path)) ?? []).compactMap(UInt32.init).sorted()
        return uids.map { Principal(uid: $0, loginName: UserDatabase.loginName(of: $0)) }
    }

    /// The service of `principal` over its store here.
    func service(for principal: Principal) -> TouchgateService {
        // One signing key for the machine: its public half, registered once, verifies every trail here.
        let location = StoreLocation(directory: directory.appendingPathComponent("users")
            .appendingPathComponent(String(principal.uid)), signingKeyDirectory: directory)
        let keys = self.keys
        var service = TouchgateService(principal: principal, location: location, mode: .system,
                                       custody: { keys.custody(for: $0) })
        service.readerPool = pool
        service.openStores = open
        service.spaceReserve = reserve
        return service
    }
}
