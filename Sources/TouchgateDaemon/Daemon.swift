public import FoundationEssentials
import Glibc
public import Logging
import Synchronization
import TouchgateBasics
import TouchgateService
public import TouchgateSocket
import TouchgateVault
public import TouchgateAPI

/// `touchgated`: serves ``DaemonProtocol`` on a listening socket for every user, over one
/// store per user in its state directory, with the unlocked keys in its own memory.
public final class Daemon: Sendable {
    private let listener: UnixListener
    private let handler: RequestHandler
    private let keys: HeldKeys
    private let settings: DaemonSettings
    private let limit: ConnectionLimit
    private let rate: RequestRate<ConnectionLimit.Bucket>
    private let connections = OpenConnections()
    private let logger: Logger
    /// touchgate agent's program, which alone may name another program in a request.
    private let agentProgram: AgentProgram

    /// A daemon serving `listener` over stores in `stateDirectory` (created 0700 if missing),
    /// shipping the trails as `fleet` says when given, within the bounds of `settings`.
    public convenience init(listener: UnixListener, stateDirectory: URL, fleet: FleetShipping? = nil,
                            settings: DaemonSettings = DaemonSettings(), logger: Logger) throws {
        try PrivateFiles.makeDirectory(stateDirectory.appendingPathComponent("users").path)
        chmod(stateDirectory.path, 0o700)
        let reserve = SpaceReserve(path: stateDirectory.appendingPathComponent("disk-reserve").path,
                                   bytes: settings.diskReserve, logger: logger)
        self.init(listener: listener, settings: settings, logger: logger, standings: SeatStandings(logger: logger)) { keys, pool in
            DaemonStores(directory: stateDirectory, keys: keys, pool: pool, open: OpenStores(), reserve: reserve, fleet: fleet)
        }
        if !reserve.replenish() {
            logger.warning("""
                no disk reserve: the disk holding \(stateDirectory.path) has less than \(2 * settings.diskReserve >> 20) \
                MiB free; on a full disk secret rm and lock will fail too
                """)
        }
    }

    /// touchgate agent's host of its user's personal store: the same protocol on
    /// `listener`, for that user alone, with the unlocked key in this process's memory
    /// (locked, never dumped) instead of the kernel keyring.
    public convenience init(personal: PersonalStore, listener: UnixListener, settings: DaemonSettings = DaemonSettings(),
                            logger: Logger) {
        self.init(listener: listener, settings: settings, logger: logger, readerLinger: Self.agentReaderLinger) { keys, pool in
            DaemonStores(directory: personal.location.directory, personal: personal, keys: keys, pool: pool,
                         open: OpenStores(), reserve: nil, fleet: nil)
        }
    }

    /// How long touchgate agent keeps a reader open after a request: long enough for a run of
    /// commands (a script, a benchmark, the next touch) to find it open, short enough that the
    /// desktop's fprintd (a lock screen) gets it back at once to a person's eye.
    public static let agentReaderLinger = Duration.seconds(30)

    /// What both hosts share: the held keys, one set of open readers for every request (a
    /// request holds them only while it uses one), the stores `stores` makes over them, and
    /// the bounds of `settings`.
    /// With `standings` (touchgated), the user at the machine's seat goes first at the reader.
    private init(listener: UnixListener, settings: DaemonSettings, logger: Logger, readerLinger: Duration? = nil,
                 standings: SeatStandings? = nil, stores: (HeldKeys, ReaderPool) -> DaemonStores) {
        self.listener = listener
        keys = HeldKeys()
        let pool = ReaderPool(logger: logger, presence: ReaderPresence(placement: settings.readerPlacement, logger: logger),
                              linger: readerLinger, standings: standings)
        handler = RequestHandler(stores: stores(keys, pool), sessions: LocalSessionRule(logger: logger))
        self.settings = settings
        agentProgram = AgentProgram(group: settings.agentGroup)
        if agentProgram.group == nil, !settings.agentGroup.isEmpty {
            logger.warning("""
                no group \(settings.agentGroup): the Secret Service through this daemon serves root's agent only; \
                make the group and install touchgate-cli set-group-ID to it (the packages do: docs/DAEMON.md)
                """)
        }
        limit = ConnectionLimit(perUser: settings.connectionsPerUser, total: settings.connections)
        rate = RequestRate(burst: settings.requestBurst, perSecond: settings.requestsPerSecond)
        FingerWait.timeout = settings.fingerTimeout
        self.logger = logger
        if let lowered = limit.lowered { logger.warning("locked memory: \(lowered)") }
    }

    /// The personal store's service, with the keys this daemon holds; nil for touchgated.
    var personalService: TouchgateService? {
        handler.stores.personal.map { handler.stores.service(for: $0.principal) }
    }

    /// The service behind this host's gate, for `caller`: how touchgate agent's own doors (SSH,
    /// the Secret Service) reach the personal store it hosts, as its socket's callers do.
    public func requests(for caller: Caller) -> any TouchgateRequests {
        GatedRequests(gate: handler.gate, caller: caller, mode: handler.stores.personal == nil ? .system : .personal)
    }

    /// The uids with a store here (touchgated's users; the agent's one user).
    public var storeOwners: Set<UInt32> {
        Set(handler.stores.principals().map(\.uid))
    }

    /// Moves an unlocked key of the personal store from the kernel keyring into this
    /// process's memory, so no other process of the user can read it there: true when one
    /// was moved.
    public func takeOverKeyringKey() async -> Bool {
        guard let service = personalService else { return false }
        return (try? await service.takeOverKeyringKey()) ?? false
    }

    /// Accepts and serves connections until ``stop()``.
    public func run() async {
        let sweeper = Task { [keys, open = handler.stores.open, reserve = handler.stores.reserve] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(30))
                keys.sweep()
                open.sweep()
                reserve?.replenish()
            }
        }
        // Sleep and resume, through logind when it is on the system bus.
        let sleeper = Task { [handler, keys, logger] in
            await SleepWatch.run(pool: handler.stores.pool, keys: keys, logger: logger)
        }
        // Every trail to the fleet collector, when root configured one.
        let shipper = Task { [stores = handler.stores, logger] in
            await stores.fleet?.run(stores: stores, logger: logger)
        }
        defer {
            sweeper.cancel()
            sleeper.cancel()
            shipper.cancel()
        }
        let listener = self.listener
        let connections = AsyncStream<Int32> { continuation in
            SystemThread.detach(name: "touchgated-accept") {
                while let descriptor = try? listener.accept() {
                    continuation.yield(descriptor)
                }
                continuation.finish()
            }
        }
        await withDiscardingTaskGroup { group in
            for await descriptor in connections {
                group.addTask { [self] in await serve(FramedSocket(descriptor: descriptor)) }
            }
        }
        await handler.stores.pool.close()
        handler.stores.open.closeAll()
        keys.releaseAll()
    }

    /// Stops accepting and ends every connection: a request in progress is cancelled (its
    /// client is told), an idle or stalled connection is closed, so the daemon stops within
    /// the send timeout whatever its clients do.
    public func stop() {
        listener.close()
        connections.closeAll()
    }

    /// The greeting every connection gets, encoded once (measured: encoding it was a twentieth
    /// of a one-request connection's time here).
    private static let hello: [UInt8] = {
        var hello = DaemonMessage(kind: .hello, id: 0)
        hello.versions = [DaemonProtocol.version]
        return DaemonProtocol.encode(hello)
    }()

    /// touchgate agent's greeting: the versions, and the store it hosts as it is now (made
    /// again since, it is another).
    private static func hello(hosting personal: PersonalStore) -> [UInt8] {
        var hello = DaemonMessage(kind: .hello, id: 0)
        hello.versions = [DaemonProtocol.version]
        hello.store = Invocation.storeIdentity(of: personal.location.directoryPath) ?? "none"
        return DaemonProtocol.encode(hello)
    }

    /// One connection: a hello, then requests one at a time, each answered once.
    ///
    /// Nothing here waits on the peer with a thread of the shared pool: its messages are
    /// read by the socket's reader thread, and what is sent to it is queued for the
    /// socket's writer thread (``FramedSocket/useOutbox(limit:sendTimeout:)``), which cuts
    /// off a peer that stops reading.
    private func serve(_ socket: FramedSocket) async {
        socket.useOutbox(limit: settings.outboxLimit, sendTimeout: settings.sendTimeout)
        guard connections.add(socket) else { return socket.close() }
        defer { connections.remove(socket) }
        guard let peer = try? socket.peer() else { return socket.close() }
        // touchgate agent serves its own user only (its socket is theirs alone too).
        if let personal = handler.stores.personal, peer.uid != personal.principal.uid {
            logger.warning("\(peer): refused: touchgate agent serves uid \(personal.principal.uid) only")
            return socket.close()
        }
        var bucket = Self.bucket(of: peer)
        if let refusal = limit.admit(bucket) {
            // Refused before the hello, and before any buffer is spent on it.
            refuse(socket, refusal, peer: peer, why: "\(bucket): connection limit")
            return
        }
        defer { limit.release(bucket) }
        guard socket.sendRaw(handler.stores.personal.map(Self.hello(hosting:)) ?? Self.hello) else { return socket.close() }
        // Read once per connection: the kernel's credentials and what /proc says of the process.
        // The process is held by a pidfd for the connection's life, so what is read of its pid
        // later (its parents for the trail, its login session) is of this process or not kept.
        let caller = Caller.connected(uid: peer.uid, gid: peer.gid, pid: peer.pid, executable: peer.executable,
                                      door: handler.stores.personal == nil ? .daemon : .agent,
                                      handle: socket.peerProcess(pid: peer.pid))
        let slot = RequestSlot()
        var broken: (any Error)?
        var firstRequest = true
        do {
            for try await frame in socket.frames() {
                let message = try frame.decode(ClientMessage.self)
                switch message.kind {
                case .request:
                    guard let operation = message.operation else { throw FrameError.malformed("a request needs an operation") }
                    guard frame.descriptors == nil || operation.contract.takesDescriptors else {
                        throw FrameError.malformed("\(operation.rawValue) takes no descriptors")
                    }
                    if firstRequest {
                        firstRequest = false
                        // Root acting for a user (sshd, login) counts against that user's share for root.
                        if bucket == .root, let user = message.arguments?.user, let uid = UserDatabase.uid(of: user), uid != 0 {
                            if let refusal = limit.move(from: .root, to: .actingFor(uid)) {
                                await slot.cancelAndWait()
                                refuse(socket, refusal, peer: peer, id: message.id, why: "root for uid \(uid): connection limit")
                                return
                            }
                            bucket = .actingFor(uid)
                        }
                    }
                    if case .refused(let first) = rate.take(bucket, for: operation, exempt: bucket == .root) {
                        try await refuseForRate(message, operation: operation, caller: caller, first: first, socket: socket)
                        continue
                    }
                    let interaction = DaemonInteraction(socket: socket, id: message.id, answers: AnswerSlot(),
                                                        canAskAgain: message.arguments?.canAskAgain ?? false,
                                                        assumeYes: message.arguments?.assumeYes ?? false,
                                                        answerTimeout: settings.answerTimeout)
                    logger.debug("\(peer): \(operation.rawValue)")
                    let handler = self.handler
                    var judged = caller
                    // The group the kernel recorded when the connection was made: an exec
                    // after connecting changes nothing of it.
                    // touchgate agent in the personal mode, on a system without the agent's group
                    // (a build run from its directory, `make install`): the user's own commands
                    // (touchgate run, mcp, approve) ask it, as they would ask the service in-process,
                    // which holds nothing against the user's own programs either. With the group
                    // (the packages), only the set-group-ID program, as touchgated asks.
                    if operation.contract.callers == .agentOnly {
                        judged.isVerifiedAgent = agentProgram.made(withGroup: peer.gid)
                            || (handler.stores.personal != nil && agentProgram.group == nil)
                    }
                    let caller = judged
                    let turn = ReaderTurns.Request(owner: Self.owner(of: bucket),
                                                   clientWait: message.arguments?.waitSeconds.map { .seconds($0) })
                    guard await slot.start(id: message.id, answers: interaction.answers, turn: turn, { [slot] in
                        let reply = await ReaderTurns.$request.withValue(turn) {
                            await handler.respond(to: message, frame: frame, caller: caller, interaction: interaction)
                        }
                        await slot.finish(id: message.id)
                        socket.sendRaw(reply.line, secret: reply.secret)
                    }) else {
                        throw FrameError.malformed("request \(message.id) arrived while request is still running")
                    }
                case .answer:
                    guard frame.descriptors == nil else { throw FrameError.malformed("an answer with descriptors") }
                    guard await slot.deliver(message, secret: frame.secret) else {
                        throw FrameError.malformed("an answer to no question")
                    }
                case .cancel:
                    await slot.cancel(id: message.id)
                }
            }
        } catch {
            broken = error
        }
        // The client is gone or broke the protocol: whatever runs for it is cancelled,
        // which releases the reader, and is waited for (its reply may still go out).
        await slot.cancelAndWait()
        if let reason = socket.cutOff { logger.notice("\(peer): cut off: \(reason)") }
        if let broken, !socket.isClosed {
            // Only then the failure: it is the last message of the connection, never
            // followed by the reply of a request that was still running.
            var failure = DaemonMessage(kind: .failure, id: 0)
            failure.error = ServiceError(.usage, "\(broken); closing the connection")
            socket.send(failure)
            logger.warning("\(peer): protocol error: \(broken)")
        }
        socket.close()
    }

    /// Whose share a new connection of `peer` counts against (its first request may move
    /// a root connection to the share of the user it acts for).
    static func bucket(of peer: Peer) -> ConnectionLimit.Bucket {
        guard peer.isRoot else { return .user(peer.uid) }
        if let real = peer.realUID(), real != 0 { return .user(real) }
        return .root
    }

    /// The user whose turn at the reader a request of `bucket` takes.
    static func owner(of bucket: ConnectionLimit.Bucket) -> UInt32 {
        switch bucket {
        case .user(let uid), .actingFor(let uid): uid
        case .root: 0
        }
    }

    /// Sends `refusal` as the connection's last message and closes it.
    private func refuse(_ socket: FramedSocket, _ refusal: ServiceError, peer: Peer, id: UInt64 = 0, why: String) {
        var message = DaemonMessage(kind: .failure, id: id)
        message.error = refusal
        socket.send(message)
        logger.notice("\(peer): refused (\(why))")
        socket.close()
    }

    /// Answers a request over the user's rate with the refusal; the first refusal since the
    /// user's bucket was full goes into their trail (and the log), the others do not.
    private func refuseForRate(_ request: ClientMessage, operation: DaemonOperation, caller: Caller, first: Bool,
                               socket: FramedSocket) async throws {
        var failure = DaemonMessage(kind: .failure, id: request.id)
        failure.error = rate.refusal
        socket.send(failure)
        guard first else { return }
        logger.warning("\(caller): over the request rate; refusing its requests until it slows down (recorded once)")
        await handler.gate.recordRefusal(rate.refusal, of: operation, caller: caller, namedUser: request.arguments?.user)
    }
}

/// The request a connection runs, if any: at most one at a time.
actor RequestSlot {
    private var running: (id: UInt64, task: Task<Void, Never>, answers: AnswerSlot)?

    /// Starts `body` as request `id`; false when one is still running. `turn` learns how to
    /// cancel it (the system going to sleep cancels the request holding the reader).
    func start(id: UInt64, answers: AnswerSlot, turn: ReaderTurns.Request,
               _ body: @escaping @Sendable () async -> Void) -> Bool {
        guard running == nil else { return false }
        let task = Task { await body() }
        turn.onCancel { task.cancel() }
        running = (id, task, answers)
        return true
    }

    /// Marks request `id` ended (before its reply is read, so the next may follow at once).
    func finish(id: UInt64) {
        if running?.id == id { running = nil }
    }

    /// Hands an answer to the running request's outstanding question.
    func deliver(_ message: ClientMessage, secret: SecretBytes?) async -> Bool {
        guard let running, running.id == message.id else { return false }
        return await running.answers.deliver(message, secret: secret)
    }

    /// Cancels request `id` if it runs.
    func cancel(id: UInt64) async {
        guard let running, running.id == id else { return }
        running.task.cancel()
        await running.answers.fail(CancellationError())
    }

    /// Cancels whatever runs and waits for it to end.
    func cancelAndWait() async {
        guard let running else { return }
        running.task.cancel()
        await running.answers.fail(CancellationError())
        await running.task.value
    }
}

/// The connections being served, so that stopping can end them.
final class OpenConnections: Sendable {
    // The sockets and whether the daemon stops, only touched under their lock.
    private let state = Mutex<(sockets: [ObjectIdentifier: FramedSocket], stopping: Bool)>(([:], false))

    /// Registers `socket`; false once the daemon stops (close it instead).
    func add(_ socket: FramedSocket) -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.sockets[ObjectIdentifier(socket)] = socket
            return true
        }
    }

    func remove(_ socket: FramedSocket) {
        state.withLock { _ = $0.sockets.removeValue(forKey: ObjectIdentifier(socket)) }
    }

    /// Ends every connection's conversation: what is queued is still written, then the
    /// connection is shut down, which ends its reader and cancels its request.
    func closeAll() {
        let all = state.withLock { state in
            state.stopping = true
            return Array(state.sockets.values)
        }
        for socket in all { socket.close() }
    }
}
