import FoundationEssentials
import TouchgateSocket
#if canImport(Glibc)
import Glibc
#endif
public import TouchgateAPI

/// The requests of ``TouchgateRequests`` sent to `touchgated` over its socket: the same
/// reports and errors as in-process, with prompts, progress and questions relayed to the
/// caller's ``Interaction``. Each call is one connection; cancelling the calling task
/// closes it, which cancels the request in the daemon and releases the reader.
public struct DaemonClient: TouchgateRequests {
    /// The daemon's socket.
    public let socketPath: String

    /// What this client says of the program it acts for (a helper's, an agent door's
    /// description of its client), sent with every request: the daemon writes it to the
    /// trail beside what the kernel told it of this process.
    public let requester: String?

    /// A client of the daemon at `socketPath`; `mode` is `.personal` for touchgate agent,
    /// which serves the personal store with the same protocol.
    public init(socketPath: String, mode: ServiceMode = .system, requester: String? = nil) {
        self.socketPath = socketPath
        self.mode = mode
        self.requester = requester
    }

    public let mode: ServiceMode

    /// What a call needs besides its operation and arguments.
    struct Parties: Sendable {
        var interaction: (any Interaction)?
        /// Who answers `new-passphrase` questions (passphrase change), when not `interaction`.
        var newPassphrase: (any Interaction)?
        /// Supplies the value of a secret being stored.
        var secretValue: (@Sendable () async throws -> SecretBytes)?
        /// Receives `output` lines.
        var output: (@Sendable (String) -> Void)?
        /// Open files sent with the request (`SCM_RIGHTS`); they stay the caller's.
        var descriptors: [Int32] = []
    }

    /// Sends one request of `spec` with its own `arguments` (and the common ones: the user it
    /// is for, and how `parties` can be asked) and relays the conversation until its result.
    func call<Spec: OperationSpec>(
        _ spec: Spec.Type, _ arguments: Spec.Arguments, user: String? = nil, _ parties: Parties = Parties()
    ) async throws(ServiceError) -> (Spec.Result, SecretBytes?) {
        var common = RequestArguments()
        common.user = user
        common.canAskAgain = parties.interaction.map { $0.canAskAgain }
        common.requester = requester
        let request = RequestMessage(id: 1, operation: Spec.operation, arguments: MergedArguments(common: common, own: arguments),
                                     descriptors: parties.descriptors.isEmpty ? nil : parties.descriptors.count)
        let socket: FramedSocket
        do {
            socket = try FramedSocket.connect(path: socketPath)
        } catch {
            throw Self.unreachable(socketPath, error)
        }
        defer { socket.close() }
        do {
            return try await withTaskCancellationHandler {
                try await converse(socket, request, parties)
            } onCancel: {
                socket.close()
            }
        } catch let error as ServiceError {
            throw error
        } catch is CancellationError {
            throw .cancelled
        } catch {
            throw ServiceError.daemonConversationFailed(String(describing: error))
        }
    }

    /// ``call(_:_:user:_:)`` for an operation with no arguments of its own.
    func call<Spec: OperationSpec>(_ spec: Spec.Type, user: String? = nil,
                                   _ parties: Parties = Parties()) async throws(ServiceError) -> Spec.Result
    where Spec.Arguments == NoArguments {
        try await call(spec, NoArguments(), user: user, parties).0
    }

    private func converse<Own: Encodable & Sendable, Report: Codable & Sendable>(
        _ socket: FramedSocket, _ request: RequestMessage<Own>, _ parties: Parties
    ) async throws -> (Report, SecretBytes?) {
        let id = request.id
        var greeted = false
        for try await frame in socket.frames() {
            let message = try frame.decode(DaemonMessage.self)
            if !greeted {
                // A daemon that will not serve this connection says why instead of hello.
                if message.kind == .failure, let error = message.error { throw error }
                guard message.kind == .hello, message.versions?.contains(DaemonProtocol.version) == true else {
                    throw ServiceError(.daemonUnavailable, "touchgated at \(socketPath) does not speak protocol version "
                                           + "\(DaemonProtocol.version); update touchgate and touchgated together")
                }
                if mode == .personal, let hosted = message.store, hosted != Invocation.thisStoreIdentity() {
                    // A record left by an agent that was killed named this store; the agent now
                    // there hosts another. Nothing was sent: the next command decides anew.
                    unlink(Invocation.storeRecord(of: socketPath))
                    throw ServiceError(.daemonUnavailable, "touchgate agent at \(socketPath) hosts another store than "
                                       + "this command's data directory; run the command again (it will run in-process), "
                                       + "or point XDG_DATA_HOME at the agent's store")
                }
                greeted = true
                let sent = parties.descriptors.isEmpty
                    ? socket.send(request) : socket.send(request, descriptors: parties.descriptors)
                guard sent else { break }
                continue
            }
            switch message.kind {
            case .hello:
                throw FrameError.malformed("a second hello")
            case .event:
                if let event = message.event { parties.interaction?.event(event) }
            case .output:
                if let text = message.text { parties.output?(text) }
            case .ask:
                guard let question = message.question else { throw FrameError.malformed("an ask without a question") }
                let (answer, secret) = await answer(question, id: id, parties)
                guard socket.send(answer, secret: secret) else { break }
            case .result:
                let result = try frame.decode(ResultMessage<Report>.self)
                return (result.result, frame.secret)
            case .failure:
                guard var error = message.error else { throw ServiceError.daemonFailedUnsaid }
                error.message = ServiceError.fromDaemon(code: error.code, message: error.message)
                throw error
            }
        }
        try Task.checkCancellation()
        throw ServiceError.daemonClosedEarly
    }

    /// The caller's answer to `question`, never throwing: a failure to ask travels back
    /// to the daemon, which ends the request with it.
    private func answer(_ question: DaemonMessage.Question, id: UInt64,
                        _ parties: Parties) async -> (ClientMessage, SecretBytes?) {
        var answer = ClientMessage(kind: .answer, id: id)
        do {
            guard let interaction = parties.interaction else {
                throw ServiceError(.passphraseRequired, "nobody to ask: \(question.prompt)")
            }
            var secret: SecretBytes?
            switch question.kind {
            case "passphrase":
                secret = try await interaction.passphrase(prompt: question.prompt, again: question.again ?? false)
            case "new-passphrase":
                secret = try await (parties.newPassphrase ?? interaction).newPassphrase(prompt: question.prompt)
            case "repeat-passphrase":
                secret = try await (parties.newPassphrase ?? interaction).repeatPassphrase(prompt: question.prompt)
            case "secret-value":
                guard let value = parties.secretValue else { throw ServiceError(.usage, "no value to store") }
                secret = try await value()
            case "confirm":
                answer.confirmed = try await interaction.confirm(question.prompt, details: question.details ?? [])
            default:
                throw ServiceError.unknownQuestion(question.kind)
            }
            answer.secretLength = secret?.count
            return (answer, secret)
        } catch let error as ServiceError {
            answer.error = error
        } catch is CancellationError {
            answer.declined = true
        } catch {
            answer.error = ServiceError(.passphraseInput, String(describing: error))
        }
        return (answer, nil)
    }
}

extension DaemonClient {
    /// Why `socketPath` could not be reached, and what to do: a daemon that is stopped
    /// (nothing there, or nobody listening) is said to be stopped, with the command that
    /// starts it; the person's vault is in its store, so no personal store stands in.
    static func unreachable(_ socketPath: String, _ error: any Error) -> ServiceError {
        let stopped: Bool
        if case SocketError.system(_, let number)? = error as? SocketError {
            stopped = number == ENOENT || number == ECONNREFUSED
        } else {
            stopped = false
        }
        guard stopped else {
            return ServiceError(.daemonUnavailable, "cannot reach touchgated at \(socketPath): \(error). Is it running? "
                                + "Check with: systemctl status touchgated.socket")
        }
        let start = socketPath == Invocation.systemSocket
            ? "start it: sudo systemctl start touchgated.socket (without systemd: sudo touchgated --user touchgated)"
            : "start touchgated with --socket \(socketPath), or name another socket in TOUCHGATE_SOCKET"
        return ServiceError(.daemonUnavailable, "touchgated is not running (nothing answers at \(socketPath)); this "
                            + "machine is set to use it, so a vault you made keeps there; \(start). To use a personal "
                            + "vault of your own instead, set TOUCHGATE_SOCKET= (empty)")
    }
}

