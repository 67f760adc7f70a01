import Foundation
import TouchgateService
import TouchgateSocket
import TouchgateVault
import TouchgateWire

/// `touchgated`: serves ``DaemonProtocol`` on a listening socket for every user, over one
/// store per user in its state directory, with the unlocked keys in its own memory.
public final class Daemon: Sendable {
    private let listener: UnixListener
    private let handler: RequestHandler
    private let keys: HeldKeys
    private let limit = ConnectionLimit()
    private let log: @Sendable (String) -> Void

    /// A daemon serving `listener` over stores in `stateDirectory` (created 0700 if missing),
    /// shipping the trails as `fleet` says when given.
    public init(listener: UnixListener, stateDirectory: URL, fleet: FleetShipping? = nil,
                log: @escaping @Sendable (String) -> Void) throws {
        try PrivateFiles.makeDirectory(stateDirectory.appendingPathComponent("users").path)
        chmod(stateDirectory.path, 0o700)
        self.listener = listener
        keys = HeldKeys()
        // One set of open readers for every user's service; the queue runs one operation at a time on them.
        let pool = ReaderPool(log: log)
        handler = RequestHandler(stores: DaemonStores(directory: stateDirectory, keys: keys, pool: pool,
                                                      open: OpenStores(), fleet: fleet),
                                 readers: ReaderQueue(), sessions: LocalSessionRule(log: log))
        self.log = log
    }

    /// Accepts and serves connections until ``stop()``.
    public func run() async {
        let sweeper = Task { [keys, open = handler.stores.open] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(30))
                keys.sweep()
                open.sweep()
            }
        }
        // Sleep and resume, through logind when it is on the system bus.
        let sleeper = Task { [handler, keys, log] in
            await SleepWatch.run(readers: handler.readers, pool: handler.stores.pool, keys: keys, log: log)
        }
        // Every trail to the fleet collector, when root configured one.
        let shipper = Task { [stores = handler.stores, log] in
            await stores.fleet?.run(stores: stores, log: log)
        }
        defer {
            sweeper.cancel()
            sleeper.cancel()
            shipper.cancel()
        }
        let listener = self.listener
        let connections = AsyncStream<Int32> { continuation in
            let thread = Thread {
                while let descriptor = try? listener.accept() {
                    continuation.yield(descriptor)
                }
                continuation.finish()
            }
            thread.name = "touchgated-accept"
            thread.start()
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

    /// Stops accepting; connections being served finish their requests.
    public func stop() {
        listener.close()
    }

    /// One connection: a hello, then requests one at a time, each answered once.
    private func serve(_ socket: FramedSocket) async {
        socket.setSendTimeout(seconds: 10)
        guard let peer = try? socket.peer() else { return socket.close() }
        guard limit.admit(peer.uid) else {
            // Refused before the hello, and before any thread or buffer is spent on it.
            var refusal = DaemonMessage(kind: .failure, id: 0)
            refusal.error = ServiceError(.daemonUnavailable,
                                         "touchgated already serves \(limit.perUser) connections of uid \(peer.uid), "
                                         + "the most one user may hold open; end some of your touchgate commands "
                                         + "(or the programs holding connections) and try again")
            socket.send(refusal)
            log("\(peer): refused: \(limit.perUser) connections of this user are open already")
            return socket.close()
        }
        defer { limit.release(peer.uid) }
        var hello = DaemonMessage(kind: .hello, id: 0)
        hello.versions = [DaemonProtocol.version]
        guard socket.send(hello) else { return socket.close() }
        let slot = RequestSlot()
        var broken: (any Error)?
        do {
            for try await frame in socket.frames() {
                let message = try frame.decode(ClientMessage.self)
                switch message.kind {
                case .request:
                    guard let operation = message.operation else { throw FrameError.malformed("a request needs an operation") }
                    guard frame.descriptors == nil || operation == .migrate else {
                        throw FrameError.malformed("only migrate sends descriptors")
                    }
                    let descriptors = frame.descriptors
                    let interaction = DaemonInteraction(socket: socket, id: message.id, answers: AnswerSlot(),
                                                        canAskAgain: message.arguments?.canAskAgain ?? false,
                                                        assumeYes: message.arguments?.assumeYes ?? false)
                    log("\(peer): \(operation.rawValue)")
                    let handler = self.handler
                    guard await slot.start(id: message.id, answers: interaction.answers, { [slot] in
                        let reply = await handler.respond(to: message, descriptors: descriptors, peer: peer,
                                                          interaction: interaction)
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
        if let broken {
            // Only then the failure: it is the last message of the connection, never
            // followed by the reply of a request that was still running.
            var failure = DaemonMessage(kind: .failure, id: 0)
            failure.error = ServiceError(.usage, "\(broken); closing the connection")
            socket.send(failure)
            log("\(peer): protocol error: \(broken)")
        }
        socket.close()
    }
}

/// The request a connection runs, if any: at most one at a time.
actor RequestSlot {
    private var running: (id: UInt64, task: Task<Void, Never>, answers: AnswerSlot)?

    /// Starts `body` as request `id`; false when one is still running.
    func start(id: UInt64, answers: AnswerSlot, _ body: @escaping @Sendable () async -> Void) -> Bool {
        guard running == nil else { return false }
        running = (id, Task { await body() }, answers)
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
