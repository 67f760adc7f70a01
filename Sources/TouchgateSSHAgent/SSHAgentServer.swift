import FoundationEssentials
import Synchronization
public import TouchgateAPI
import TouchgateSSH
public import TouchgateSocket
public import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate agent`'s SSH door: the SSH agent protocol on a socket only its user can
/// reach, over the vault's SSH keys. It decides nothing: every signature is the service's
/// `ssh.sign`, which applies the key's policy to what the data is; this door only turns the
/// agent protocol into requests and says on the requester's terminal what it waits for.
public final class SSHAgentServer: Sendable {
    /// The service for each client, as this door found it (behind the hosting agent's gate,
    /// or touchgated's client).
    let service: RequestsForCaller
    let listener: UnixListener
    /// Where the agent reports what it does and what it waits for (its standard error;
    /// JSON lines with `--json`).
    let console: Console

    /// The most sessions one connection may bind (OpenSSH's own agent keeps 16).
    static let maximumBindings = 16
    /// The most clients connected at once. A new client past it takes the place of the one
    /// that has waited longest without a message (never one being answered): the user's own
    /// idle connections cannot lock every other client out (issue 45).
    static let maximumConnections = 64
    /// The clients connected now, by the token the poller reports them with.
    private let clients = Mutex<[UInt64: AgentConnection]>([:])
    /// Waits for the listener and every client at once.
    private let poller: Poller
    /// Runs listings on the waiting thread.
    private let waitingThread: WaitingThreadExecutor
    /// Set by ``stop()``.
    private let stopping = Atomic(false)
    /// The listener's token; clients' tokens count up from 1.
    private static let listenerToken: UInt64 = 0
    /// The extensions this agent answers, as the `query` extension lists them.
    static let extensions = ["query", SessionBind.extensionName, SecurityKeyRequest.enrollName, SecurityKeyRequest.signName]

    /// Whether listings are answered on the waiting thread: only where the service is hosted
    /// in this process and answers from memory. Forwarded to touchgated, a listing connects
    /// to its socket, which blocks while the daemon's queue of connections is full.
    private let listsOnWaitingThread: Bool

    public init(requests: @escaping RequestsForCaller, hostedHere: Bool, listener: UnixListener,
         console: Console) throws(ServiceError) {
        service = requests
        listsOnWaitingThread = hostedHere
        self.listener = listener
        self.console = console
        do {
            poller = try Poller()
            try poller.add(listener.descriptor, token: Self.listenerToken, edgeTriggered: false)
            waitingThread = WaitingThreadExecutor(poller: poller)
        } catch {
            throw ServiceError(.error, "touchgate agent cannot wait for clients: \(error)")
        }
    }

    /// Reports what the agent did or refused.
    func log(_ line: String) {
        console.event(InteractionEvent(.notice, line))
    }

    /// Serves until ``stop()``. One thread waits for new clients and for every connected
    /// client's next message at once, as OpenSSH's agent does; a whole message is answered
    /// by a task of the connection's own, which then answers whatever else that client sent
    /// meanwhile. The thread reads without ever blocking, so a client that sends half a
    /// message or never reads its answers holds nothing but its buffered bytes.
    ///
    /// Hand-written over epoll for a measurement: a thread per client, started at each
    /// connection, cost a listing (`ssh-add -L`) about a third of its time in the agent, and
    /// waking that thread and then the answering task twice per message most of the rest.
    public func run() async {
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            // epoll_wait blocks: a thread of its own, not one of the cooperative pool's.
            SystemThread.detach(name: "touchgate-agent") {
                self.waitForClients()
                stopped.resume()
            }
        }
    }

    /// Stops listening and ends ``run()``; answers being made end with their clients.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        listener.close()
        poller.wake()
    }

    private func waitForClients() {
        waitingThread.runsHere()
        var ready = [UInt64](repeating: 0, count: 64)
        var nextToken: UInt64 = 1
        while true {
            waitingThread.runPending()
            let count: Int
            do {
                count = try poller.wait(into: &ready)
            } catch {
                log("\(error); the agent stops serving")
                return
            }
            for token in ready[..<count] {
                switch token {
                case Poller.wakeToken:
                    if stopping.load(ordering: .sequentiallyConsistent) { return }
                case Self.listenerToken:
                    // The poller said a connection waits, so this does not block.
                    guard let descriptor = try? listener.accept() else { return }
                    admit(descriptor, token: nextToken)
                    nextToken += 1
                default:
                    if let connection = clients.withLock({ $0[token] }) {
                        proceed(connection, connection.next(afterAnswer: false))
                    }
                }
            }
        }
    }

    /// A new client: its first message may be whole already (ssh-add, ssh and ssh-keygen
    /// send it as they connect), so it is looked for at once.
    private func admit(_ descriptor: Int32, token: UInt64) {
        // The socket is the user's alone (mode 0600 in a 0700 directory); the kernel's word
        // on who connected is checked all the same.
        guard let peer = try? Peer.of(socket: descriptor, withExecutable: false), peer.uid == getuid() else {
            close(descriptor)
            log("refused a connection from another user")
            return
        }
        let connection = AgentConnection(token: token, descriptor: descriptor,
                                         requester: ClientProcess(pid: peer.pid, uid: peer.uid, gid: peer.gid,
                                                                  handle: ProcessHandle.peer(of: descriptor, pid: peer.pid)))
        let admitted: (room: Bool, evicted: AgentConnection?) = clients.withLock { clients in
            var evicted: AgentConnection?
            if clients.count >= Self.maximumConnections {
                // The client idle longest gives way; none does while every one is being answered.
                let idle = clients.values.compactMap { client in client.idleSince.map { (client, $0) } }
                guard let oldest = idle.min(by: { $0.1 < $1.1 })?.0 else { return (false, nil) }
                clients[oldest.token] = nil
                evicted = oldest
            }
            clients[token] = connection
            return (true, evicted)
        }
        if let evicted = admitted.evicted {
            evicted.end()
            log("more than \(Self.maximumConnections) clients at once: closed the one idle longest (pid "
                + "\(evicted.requester.pid)) for a new one")
        }
        guard admitted.room else {
            connection.end()
            log("more than \(Self.maximumConnections) clients at once, every one being answered; one was turned away")
            return
        }
        do {
            try poller.add(descriptor, token: token, edgeTriggered: true)
        } catch {
            log("\(error); a client was turned away")
            connection.end()
            forget(connection)
            return
        }
        proceed(connection, connection.next(afterAnswer: false))
    }

    /// Acts on what the waiting thread found on a connection.
    private func proceed(_ connection: AgentConnection, _ next: AgentConnection.Next?) {
        switch next {
        case .message(let body)?:
            answer(connection, body)
        case .ended(let error)?:
            ended(connection, error)
        case .waiting?, nil:
            break
        }
    }

    /// A connection the client closed, or that broke the framing (`error`, logged): dropped.
    /// The log names the client by pid only: this may run on the waiting thread, which must
    /// not read a process chain from /proc for every client that sends garbage.
    private func ended(_ connection: AgentConnection, _ error: SSHWireError?) {
        if let error { log("client pid \(connection.requester.pid): \(error); connection closed") }
        forget(connection)
    }

    /// Whether `body` is a listing (`ssh-add -L`, and the first message of every ssh).
    private static func isListing(_ body: [UInt8]) -> Bool {
        body == [AgentNumber.requestIdentities]
    }

    /// Starts answering `body`: a listing on the waiting thread itself where the service is
    /// hosted here (it only reads what the service keeps; measured, handing it to a thread
    /// of the pool and back cost a listing a third of its time in the agent), anything else
    /// on the pool (a signature waits for a finger, an unlock derives a key).
    private func answer(_ connection: AgentConnection, _ body: [UInt8]) {
        if listsOnWaitingThread && Self.isListing(body) {
            Task(executorPreference: waitingThread) { await self.answerAll(connection, first: body, onWaitingThread: true) }
        } else {
            Task { await self.answerAll(connection, first: body, onWaitingThread: false) }
        }
    }

    /// Answers `first`, then every message the client sent meanwhile, in order, each
    /// answer sent before the next message is taken: a client that floods requests gets
    /// no queue in the agent.
    func answerAll(_ connection: AgentConnection, first: [UInt8], onWaitingThread: Bool) async {
        var body = first
        while true {
            let response = Self.isListing(body)
                ? await answer(body, bindings: &connection.bindings, requester: connection.requester)
                : await answerWhileConnected(connection, body)
            // An added key or a lock passphrase came in this message: its bytes are copied
            // into secret memory by the decoder and wiped here.
            _ = body.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            switch connection.send(response.frame) {
            case .sent:
                break
            case .gone:
                connection.end()
                forget(connection)
                return
            case .notReading:
                // Its receive buffer is full of answers it never read: not a client that
                // waits for them, as every agent client does.
                log("\(connection.requester): does not read its answers; connection closed")
                connection.end()
                forget(connection)
                return
            }
            switch connection.next(afterAnswer: true) {
            case .message(let next)? where onWaitingThread && !Self.isListing(next):
                Task { await self.answerAll(connection, first: next, onWaitingThread: false) }
                return
            case .message(let next)?:
                body = next
            case .ended(let error)?:
                ended(connection, error)
                return
            case .waiting?, nil:
                return
            }
        }
    }

    /// Answers `body`, cancelled when the client hangs up meanwhile (a cancelled ssh or
    /// git): the wait for a finger ends at once and the trail says so, where it went on for
    /// its minute for nobody and its message then landed in another command's output.
    private func answerWhileConnected(_ connection: AgentConnection, _ body: [UInt8]) async -> AgentResponse {
        let bindings = connection.bindings
        let requester = connection.requester
        let work = Task { () -> (AgentResponse, [SSHSessionBinding]) in
            var bindings = bindings
            let response = await self.answer(body, bindings: &bindings, requester: requester)
            return (response, bindings)
        }
        let watcher = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                if connection.clientHungUp {
                    work.cancel()
                    return
                }
            }
        }
        let (response, updated) = await work.value
        watcher.cancel()
        connection.bindings = updated
        return response
    }

    /// Drops an ended connection from those the thread serves.
    private func forget(_ connection: AgentConnection) {
        _ = clients.withLock { $0.removeValue(forKey: connection.token) }
    }

    /// The answer to one message.
    func answer(_ body: [UInt8], bindings: inout [SSHSessionBinding], requester: ClientProcess) async -> AgentResponse {
        // A listing names no one in the trail and must stay cheap: its caller is the process
        // alone; everything else is described with its process chain.
        let requests = service(requester.caller(described: !Self.isListing(body)))
        let request: AgentRequest
        do {
            request = try AgentRequest(body: body)
        } catch {
            log("\(requester): \(error)")
            return .failure
        }
        switch request {
        case .requestIdentities:
            do {
                // Security keys sign through OpenSSH's provider, not through the agent.
                let keys = try await requests.sshList().filter {
                    $0.type != SecurityKeySignedMessage.keyTypeName && $0.isOffered
                }
                return .identities(keys.map { AgentIdentity(keyBlob: [UInt8]($0.publicKey), comment: $0.name) })
            } catch {
                log("\(requester): listing keys failed: \(error.message)")
                // As a locked ssh-agent does: no keys, so ssh goes on to its other ways in;
                // the person is told why on the terminal that asked.
                guard error.code == .vaultLocked || error.code == .noVault else { return .failure }
                AgentInteraction(terminal: requester.terminal, console: console).tell("touchgate agent: \(error.message)")
                return .identities([])
            }
        case .sign(let keyBlob, let data, let flags):
            let request = SSHSignRequest(publicKey: Data(keyBlob), data: Data(data), flags: flags.rawValue, bindings: bindings)
            let interaction = AgentInteraction(terminal: requester.terminal, console: console)
            do {
                let report = try await requests.sshSign(request, interaction: interaction)
                log("\(requester): signed: \(report.purpose)")
                return .signature([UInt8](report.signature))
            } catch {
                interaction.tell("touchgate agent: \(error.message)")
                log("\(requester): no signature: \(error.message)")
                return .failure
            }
        case .extension(let name, let contents) where name == SessionBind.extensionName:
            do {
                let bind = try SessionBind(contents: contents)
                guard bindings.count < Self.maximumBindings else {
                    log("\(requester): more than \(Self.maximumBindings) session bindings; refused")
                    return .failure
                }
                let known = Self.knownHostNames(for: bind.hostKey)
                bindings.append(SSHSessionBinding(hostKey: Data(bind.hostKey), sessionID: Data(bind.sessionIdentifier),
                                                  signature: Data(bind.signature), forwarding: bind.isForwarding,
                                                  hostNames: known.names, hashedHostEntries: known.hashedEntries))
                return .success
            } catch {
                log("\(requester): \(error)")
                return .failure
            }
        case .extension("query", let contents):
            return contents.isEmpty ? .query(Self.extensions) : .failure
        case .extension(let name, let contents)
            where name == SecurityKeyRequest.enrollName || name == SecurityKeyRequest.signName:
            return await securityKey(name, contents, bindings: bindings, requests: requests, requester: requester)
        case .add(let addition):
            return await add(addition, requests: requests, requester: requester)
        case .remove(let keyBlob):
            // The vault is to the agents what key files are to OpenSSH's: a removed key is no
            // longer offered (the service keeps which, and records it), and stays sealed until
            // touchgate secret rm removes it.
            do {
                let reports = try await requests.sshOffer(.withdraw([Data(keyBlob)]))
                let names = reports.filter { $0.publicKey == Data(keyBlob) }.map { "'" + StoredText.escaped($0.name) + "'" }
                log("\(requester): stopped offering \(names.joined(separator: ", ")) (it stays sealed in the vault)")
                return .success
            } catch {
                log("\(requester): ssh-add -d: \(error.message)")
                return .failure
            }
        case .removeAll:
            do {
                _ = try await requests.sshOffer(.withdrawAll)
                log("\(requester): stopped offering every key (they stay sealed in the vault)")
                return .success
            } catch {
                log("\(requester): ssh-add -D: \(error.message)")
                return .failure
            }
        case .lock:
            // The agent's lock is the vault's: every key stops signing until it is unlocked.
            do {
                _ = try await requests.lock()
                log("\(requester): locked the vault")
                return .success
            } catch {
                log("\(requester): lock failed: \(error.message)")
                return .failure
            }
        case .unlock(let passphrase):
            let interaction = AgentInteraction(terminal: nil, console: console, passphrase: passphrase)
            do {
                _ = try await requests.unlock(onlyIfDue: false, interaction: interaction)
                log("\(requester): unlocked the vault")
                return .success
            } catch {
                log("\(requester): unlock failed: \(error.message)")
                return .failure
            }
        case .extension, .unknown:
            return .failure
        }
    }

    /// `ssh-add FILE`: the key is sealed into the vault under its comment, with the policy
    /// the service gives an added key (`-c`: a touch for every signature), and offered. A key
    /// the vault already holds is offered again (after `ssh-add -d`). With `-t` the agents
    /// offer it for that long; it stays sealed in the vault, as a key file stays on disk.
    /// Which keys are offered is the service's to keep and record (``SSHOfferChange``).
    func add(_ addition: AgentKeyAddition, requests: any TouchgateRequests, requester: ClientProcess) async -> AgentResponse {
        let fresh = addition.requiresConfirmation
        let lifetime = addition.lifetime.map { Int($0) }
        let blob = Data(addition.publicKey.blob)
        let destinations = addition.destinations?.map {
            SSHDestination(fromHost: $0.fromHost.isEmpty ? nil : $0.fromHost, fromKeys: $0.fromKeys.map { Data($0) },
                           toUser: $0.toUser.isEmpty ? nil : $0.toUser, toHost: $0.toHost, toKeys: $0.toKeys.map { Data($0) })
        }
        let offer = SSHOfferChange.offer(blob, lifetime: lifetime, destinations: destinations)
        let words = (lifetime.map { " for \($0) s" } ?? "")
            + (destinations.map { " over " + $0.map(\.description).joined(separator: ", ") } ?? "")
        do {
            if let held = try? await requests.sshList(), held.contains(where: { $0.publicKey == blob }) {
                _ = try await requests.sshOffer(offer)
                log("\(requester): the key is already sealed in the vault; offered again" + words)
                return .success
            }
            let name = addition.comment.isEmpty
                ? "ssh-key-" + addition.publicKey.blob.suffix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                : addition.comment
            // OpenSSH sends an Ed25519 seed and public key together; the vault keeps the seed
            // alone (a P-256 scalar is 32 bytes already).
            let seed = addition.privateKey.withUnsafeBytes { SecretBytes(copying: $0.prefix(32)) }
            let report = try await requests.sshAdd(name, publicKey: blob, seed: { seed }, policy: "", fresh: fresh)
            _ = try await requests.sshOffer(offer)
            log("\(requester): sealed SSH key '\(StoredText.escaped(report.name))' (\(report.fingerprint)) into the vault"
                + (fresh ? "; every signature needs a touch" : "") + (words.isEmpty ? "" : "; offered" + words))
            return .success
        } catch {
            log("\(requester): the key was not added: \(error.message)")
            return .failure
        }
    }

    /// What Touchgate's security-key provider (libtouchgate-sk.so, inside ssh-sk-helper)
    /// asks: make a key in the vault, or sign with one. The service decides both; a refusal
    /// is an extension failure, and the reason goes to the requester's terminal.
    func securityKey(_ name: String, _ contents: [UInt8], bindings: [SSHSessionBinding], requests: any TouchgateRequests,
                     requester: ClientProcess) async -> AgentResponse {
        let interaction = AgentInteraction(terminal: requester.terminal, console: console)
        do throws(ServiceError) {
            let request: SecurityKeyRequest
            do throws(SSHWireError) {
                guard let decoded = try SecurityKeyRequest(extension: name, contents: contents) else { return .failure }
                request = decoded
            } catch {
                throw ServiceError(.usage, "a malformed security-key request: \(error)")
            }
            switch request {
            case .enroll(let algorithm, let application, let flags, let user):
                try Self.requireEd25519(algorithm)
                let made = try await requests.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: user, application: application,
                                                                                        flags: flags.rawValue))
                let shown = StoredText.escaped(made.key.name)
                log("\(requester): made security key '\(shown)' (\(made.key.fingerprint)) in the vault")
                interaction.tell("touchgate agent: made security key '\(shown)' in the vault; every signature asks for "
                                 + "the finger")
                return .extensionReply(SecurityKeyReply.enrolled(publicKey: [UInt8](made.rawPublicKey),
                                                                 keyHandle: [UInt8](made.keyHandle),
                                                                 flags: SecurityKeyFlags(rawValue: made.flags)).contents)
            case .sign(let algorithm, let application, let keyHandle, let flags, let data):
                try Self.requireEd25519(algorithm)
                let signed = try await requests.sshSkSign(SSHSecurityKeySignRequest(application: application,
                                                                                    keyHandle: Data(keyHandle),
                                                                                    flags: flags.rawValue, data: Data(data),
                                                                                    bindings: bindings),
                                                          interaction: interaction)
                let verified = SecurityKeyFlags(rawValue: signed.flags).contains(.userVerification)
                log("\(requester): signed: \(signed.purpose)" + (verified ? " (finger verified)" : " (not verified)"))
                return .extensionReply(SecurityKeyReply.signed(flags: SecurityKeyFlags(rawValue: signed.flags),
                                                               counter: signed.counter,
                                                               signature: [UInt8](signed.signature)).contents)
            }
        } catch {
            interaction.tell("touchgate agent: \(error.message)")
            log("\(requester): security key: \(error.message)")
            return .extensionFailure
        }
    }

    static func requireEd25519(_ algorithm: UInt32) throws(ServiceError) {
        guard algorithm == SecurityKeyAlgorithm.ed25519 else {
            throw ServiceError(.usage, "the vault makes and uses ed25519-sk security keys only; run ssh-keygen -t ed25519-sk")
        }
    }

    /// The names the user's known_hosts files (`~/.ssh/known_hosts`, `known_hosts2`, and the
    /// system's `/etc/ssh/ssh_known_hosts`) give a host key; each file read at most 1 MiB.
    static func knownHostNames(for hostKey: [UInt8]) -> (names: [String], hashedEntries: Int) {
        let home = ProcessInfo.processInfo.environment["HOME"]
            ?? FileManager.default.homeDirectoryForCurrentUser.withUnsafeFileSystemRepresentation { String(cString: $0!) }
        var names: [String] = []
        var hashed = 0
        for path in [home + "/.ssh/known_hosts", home + "/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts"] {
            guard let data = FileInput.read(path, upTo: 1 << 20), !data.isEmpty else { continue }
            let found = KnownHosts.names(for: hostKey, in: String(decoding: data, as: UTF8.self))
            names += found.names.filter { !names.contains($0) }
            hashed += found.hashedEntries
        }
        return (names, hashed)
    }
}

/// The process at the other end of a connection, described when a request first needs it:
/// a listing needs neither its process chain nor its terminal, and reading them from /proc
/// was most of what a listing cost. Used by whoever holds the connection's turn (``AgentConnection``).
final class ClientProcess: CustomStringConvertible {
    let pid: Int32
    let uid: UInt32
    let gid: UInt32?
    /// The process, held by a pidfd while it is connected.
    let handle: ProcessHandle?
    init(pid: Int32, uid: UInt32, gid: UInt32? = nil, handle: ProcessHandle? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.handle = handle
    }
    /// The process chain, as the log and the audit record name the requester: read while
    /// the process still runs, so it is never another process's given the same pid.
    lazy var description = handle.map { handle in
        handle.whileRunning { ProcessTable.describe(helper: "touchgate agent", pid: $0) }
            ?? "touchgate agent for pid \(pid), which exited before it was read"
    } ?? ProcessTable.describe(helper: "touchgate agent", pid: pid)
    /// Its user's login name, read once.
    lazy var loginName = UserDatabase.loginName(of: uid)

    /// The caller this door found: the kernel's uid and pid for the connection, and
    /// (`described`) the process chain the trail names.
    func caller(described: Bool) -> Caller {
        var caller = Caller(uid: uid, loginName: loginName, pid: pid, executable: nil, door: .ssh,
                            requester: described ? description : nil)
        caller.gid = gid
        caller.handle = handle
        return caller
    }
    /// Where the person who ran the client reads its errors: for `git commit -S`, git's
    /// terminal (git reads ssh-keygen's standard error, and the screen stayed blank).
    lazy var terminal = RequesterTerminal.of(pid)
}

/// Runs the tasks given it on the agent's waiting thread, between two waits for clients.
/// What runs here must never block: only listings do, which read what the service keeps.
final class WaitingThreadExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])
    private let poller: Poller
    /// The waiting thread, once it runs.
    private let thread = Atomic<UInt>(0)

    init(poller: Poller) {
        self.poller = poller
    }

    /// Called by the waiting thread as it starts.
    func runsHere() {
        thread.store(UInt(pthread_self()), ordering: .sequentiallyConsistent)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        // The waiting thread runs what it enqueued itself before it waits again.
        if UInt(pthread_self()) != thread.load(ordering: .sequentiallyConsistent) { poller.wake() }
    }

    /// Runs what was enqueued, and what that enqueues, until nothing is left.
    func runPending() {
        while true {
            let pending = jobs.withLock { jobs in
                defer { jobs.removeAll(keepingCapacity: true) }
                return jobs
            }
            guard !pending.isEmpty else { return }
            for job in pending { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}

/// One client's connection. The waiting thread takes its next whole message only while
/// no answer is being made; the task that answers takes the following ones itself, so one
/// connection's messages are answered one at a time, in order.
///
/// `@unchecked Sendable`: `bindings` and `requester` are touched only by whoever holds the
/// connection's turn (the task answering it, or the waiting thread when none is), which
/// `input`'s lock hands over.
final class AgentConnection: @unchecked Sendable {
    enum Next {
        /// A whole message's body; the receiver now answers it.
        case message([UInt8])
        /// Nothing whole yet: the waiting thread is told when more arrives.
        case waiting
        /// The connection is closed: the client hung up, or broke the framing (`error`).
        case ended(SSHWireError?)
    }

    enum Sent { case sent, gone, notReading }

    private struct Input: ~Copyable {
        var received = ReceivedMessages()
        var answering = false
        var ended = false
        /// When the client last sent a whole message, or connected.
        var lastMessage = ContinuousClock.now
    }

    let token: UInt64
    private let descriptor: Int32
    private let input = Mutex(Input())
    let requester: ClientProcess
    /// The sessions this connection bound (session-bind@openssh.com).
    var bindings: [SSHSessionBinding] = []

    /// Takes `descriptor`, which ``end()`` (or ending on the client's side) closes.
    init(token: UInt64, descriptor: Int32, requester: ClientProcess) {
        self.token = token
        self.descriptor = descriptor
        self.requester = requester
    }

    /// The next whole message, if one has arrived, reading without blocking. nil when an
    /// answer is being made (the waiting thread), unless `afterAnswer` (the answering task,
    /// whose answer is sent).
    func next(afterAnswer: Bool) -> Next? {
        input.withLock { input in
            if afterAnswer {
                input.answering = false
            } else if input.answering || input.ended {
                return nil
            }
            let next = input.received.next(from: descriptor)
            switch next {
            case .message:
                input.answering = true
                input.lastMessage = .now
            case .ended:
                input.ended = true
                close(descriptor)
            case .waiting: break
            }
            return next
        }
    }

    /// Since when the client has sent nothing while no answer is being made for it; nil
    /// while one is, or once it ended.
    var idleSince: ContinuousClock.Instant? {
        input.withLock { input in input.answering || input.ended ? nil : input.lastMessage }
    }

    /// Sends an answer without blocking (answers are small, and a client waits for each).
    func send(_ bytes: [UInt8]) -> Sent {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if written > 0 {
                offset += written
                continue
            }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .notReading : .gone
        }
        return .sent
    }

    /// Whether the client has closed its end (or the connection broke) while it waits for
    /// an answer; false once the connection ended here.
    var clientHungUp: Bool {
        input.withLock { input in
            guard !input.ended else { return false }
            // POLLRDHUP (Linux's 0x2000): Glibc shows it to Swift only under _GNU_SOURCE.
            let readHangUp: Int16 = 0x2000
            var poller = pollfd(fd: descriptor, events: readHangUp, revents: 0)
            guard poll(&poller, 1, 0) == 1 else { return false }
            return poller.revents & (readHangUp | Int16(POLLHUP | POLLERR)) != 0
        }
    }

    /// Closes the connection (by the answering task, or before it was ever served).
    func end() {
        input.withLock { input in
            guard !input.ended else { return }
            input.ended = true
            close(descriptor)
        }
    }
}

/// The bytes a connection has received and not yet answered, in memory zeroed as it is
/// consumed or freed: an added key or an unlock passphrase passes through here. Holds
/// 4 KiB, more only while a longer message arrives (at most ``AgentFrame/maximumLength``).
/// Not thread-safe: its connection's lock guards it.
struct ReceivedMessages: ~Copyable {
    private static let usual = 4096
    private var storage = Self.zeroed(Self.usual)
    private var count = 0

    private static func zeroed(_ size: Int) -> UnsafeMutableRawBufferPointer {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
        memory.initializeMemory(as: UInt8.self, repeating: 0)
        return memory
    }

    private static func free(_ memory: UnsafeMutableRawBufferPointer) {
        explicit_bzero(memory.baseAddress!, memory.count)
        memory.deallocate()
    }

    deinit { Self.free(storage) }

    /// The next whole message, reading what `descriptor` has without blocking.
    mutating func next(from descriptor: Int32) -> AgentConnection.Next {
        while true {
            let scan: AgentFrame.Scan
            do throws(SSHWireError) {
                scan = try AgentFrame.scan(UnsafeBufferPointer(start: storage.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                               count: count))
            } catch {
                return .ended(error)
            }
            switch scan {
            case .complete(let body):
                let message = Array(storage[body])
                consume(body.upperBound)
                return .message(message)
            case .incomplete(let needed):
                if count + needed > storage.count { grow(to: count + needed) }
                let free = storage.count - count
                let received = recv(descriptor, storage.baseAddress! + count, free, Int32(MSG_DONTWAIT))
                if received > 0 {
                    count += received
                } else if received == 0 {
                    return .ended(nil)
                } else if errno == EAGAIN || errno == EWOULDBLOCK {
                    return .waiting
                } else if errno != EINTR {
                    return .ended(nil)
                }
            }
        }
    }

    private mutating func grow(to size: Int) {
        let larger = Self.zeroed(size)
        larger.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[..<count]))
        Self.free(storage)
        storage = larger
    }

    /// Drops the first `length` bytes, moving the rest to the front and zeroing what they
    /// leave; back to the usual size once a long message is gone.
    private mutating func consume(_ length: Int) {
        let rest = count - length
        let base = storage.baseAddress!
        if rest > 0 { base.copyMemory(from: base + length, byteCount: rest) }
        (base + rest).initializeMemory(as: UInt8.self, repeating: 0, count: count - rest)
        count = rest
        if storage.count > Self.usual && rest <= Self.usual {
            let usual = Self.zeroed(Self.usual)
            usual.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[..<rest]))
            Self.free(storage)
            storage = usual
        }
    }
}

/// The agent's side of a signature: it has no terminal of its own, so what the service
/// says (touch the reader to sign …) goes to its log and to the terminal of the program
/// that asked; it cannot ask for a passphrase or a confirmation.
struct AgentInteraction: Interaction {
    let terminal: RequesterTerminal?
    let console: Console
    /// The passphrase the client sent (`ssh-add -X`), the only one the agent can give.
    let given: SecretBytes?

    init(terminal: RequesterTerminal?, console: Console, passphrase: SecretBytes? = nil) {
        self.terminal = terminal
        self.console = console
        given = passphrase
    }

    func event(_ event: InteractionEvent) {
        console.event(event)
        tell(event.message)
    }

    /// Shows `message` on the requester's terminal.
    func tell(_ message: String) {
        terminal?.tell(message)
    }

    func passphrase(prompt: String, again: Bool) throws -> SecretBytes {
        if let given, !again { return given }
        throw Self.cannotAsk
    }

    func newPassphrase(prompt: String) throws -> SecretBytes { throw Self.cannotAsk }

    func repeatPassphrase(prompt: String) throws -> SecretBytes { throw Self.cannotAsk }

    static let cannotAsk = ServiceError(.passphraseRequired, "touchgate agent cannot ask for the passphrase; run "
                                        + "touchgate unlock (or ssh-add -X), then try again")

    var canAskAgain: Bool { false }

    func confirm(_ question: String, details: [String]) throws -> Bool { false }
}
