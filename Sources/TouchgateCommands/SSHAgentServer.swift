import Foundation
import Synchronization
import TouchgateAPI
import TouchgateSSH
import TouchgateSocket
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate agent`'s SSH door: the SSH agent protocol on a socket only its user can
/// reach, over the vault's SSH keys. It decides nothing: every signature is the service's
/// `ssh.sign`, which applies the key's policy to what the data is; this door only turns the
/// agent protocol into requests and says on the requester's terminal what it waits for.
final class SSHAgentServer: Sendable {
    let requests: any TouchgateRequests
    let listener: UnixListener
    /// Where the agent reports what it does and what it waits for (its standard error;
    /// JSON lines with `--json`).
    let console: Console

    /// The most sessions one connection may bind (OpenSSH's own agent keeps 16).
    static let maximumBindings = 16
    /// The most clients served at once; each holds a thread while it is connected.
    static let maximumConnections = 64
    /// How long an answer may wait for a client that does not read it.
    static let sendTimeoutSeconds = 5
    /// The clients connected now.
    private let connected = Mutex(0)
    /// Which vault keys this agent offers (`ssh-add -d`, `-D` and `-t` change it).
    let offered = OfferedKeys()
    /// The extensions this agent answers, as the `query` extension lists them.
    static let extensions = ["query", SessionBind.extensionName, SecurityKeyRequest.enrollName, SecurityKeyRequest.signName]

    init(requests: any TouchgateRequests, listener: UnixListener, console: Console) {
        self.requests = requests
        self.listener = listener
        self.console = console
    }

    /// Reports what the agent did or refused.
    func log(_ line: String) {
        console.event(InteractionEvent(.notice, line))
    }

    /// Serves until the listener is closed; each client is served by a task of its own,
    /// started by the accepting thread itself (handing each connection through a stream to
    /// a task that started another cost a listing a tenth of its time in the agent). Tasks
    /// still serving when the listener closes end with their clients.
    func run() async {
        let listener = self.listener
        await withCheckedContinuation { (closed: CheckedContinuation<Void, Never>) in
            // accept blocks: a thread of its own, not one of the cooperative pool's.
            let thread = Thread {
                while let descriptor = try? listener.accept() {
                    Task { await self.serve(descriptor) }
                }
                closed.resume()
            }
            thread.name = "touchgate-agent-accept"
            thread.start()
        }
    }

    /// One client: its requests in order, each answered before the next is read. The
    /// client's thread reads and writes (``AgentConnection``); this task only answers.
    func serve(_ descriptor: Int32) async {
        // The socket is the user's alone (mode 0600 in a 0700 directory); the kernel's word
        // on who connected is checked all the same.
        guard let peer = try? Peer.of(socket: descriptor, withExecutable: false), peer.uid == getuid() else {
            close(descriptor)
            log("refused a connection from another user")
            return
        }
        let admitted = connected.withLock { count in
            guard count < Self.maximumConnections else { return false }
            count += 1
            return true
        }
        guard admitted else {
            close(descriptor)
            log("more than \(Self.maximumConnections) clients at once; one was turned away")
            return
        }
        defer { connected.withLock { $0 -= 1 } }
        let connection = AgentConnection(descriptor: descriptor, sendTimeoutSeconds: Self.sendTimeoutSeconds)
        defer { connection.finish() }
        let requester = ClientProcess(pid: peer.pid)
        var bindings: [SSHSessionBinding] = []
        // Most clients (ssh-add, ssh, ssh-keygen) send their first request as they connect:
        // when it is all there, it is answered here at once, and the connection's thread,
        // started after, reads what follows. Waiting for that thread first was most of what
        // a listing cost beyond OpenSSH's agent. The reply cannot stall this task: it is
        // the first bytes sent on the socket, whose buffer is empty.
        if var body = connection.readyMessage() {
            let response = await answer(body, bindings: &bindings, requester: requester)
            _ = body.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            // A client gone already is found by the thread, which then closes the socket.
            _ = SSHAgentServer.write(response.frame, to: connection.descriptor)
        }
        for await frame in connection.messages() {
            switch frame {
            case .failure(let error):
                log("\(requester): \(error); connection closed")
                return
            case .body(var body):
                let response = await answer(body, bindings: &bindings, requester: requester)
                // An added key or a lock passphrase came in this message: its bytes are
                // copied into secret memory by the decoder and wiped here.
                _ = body.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
                connection.reply(response.frame)
            }
        }
    }

    /// The answer to one message.
    func answer(_ body: [UInt8], bindings: inout [SSHSessionBinding], requester: ClientProcess) async -> AgentResponse {
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
                    $0.type != SecurityKeySignedMessage.keyTypeName && offered.offers([UInt8]($0.publicKey))
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
            guard offered.offers(keyBlob) else {
                AgentInteraction(terminal: requester.terminal, console: console).tell("touchgate agent: \(OfferedKeys.withheldWords)")
                log("\(requester): no signature: \(OfferedKeys.withheldWords)")
                return .failure
            }
            let request = SSHSignRequest(publicKey: Data(keyBlob), data: Data(data), flags: flags.rawValue, bindings: bindings)
            let interaction = AgentInteraction(terminal: requester.terminal, console: console)
            do {
                let report = try await Requester.actingFor(requester.description) { () async throws(ServiceError) in
                    try await requests.sshSign(request, interaction: interaction)
                }
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
            return await securityKey(name, contents, requester: requester)
        case .add(let addition):
            return await add(addition, requester: requester)
        case .remove(let keyBlob):
            // The vault is to this agent what key files are to OpenSSH's: a removed key is
            // no longer offered here, and stays sealed until touchgate secret rm removes it.
            do {
                let keys = try await requests.sshList()
                guard keys.contains(where: { [UInt8]($0.publicKey) == keyBlob }), offered.offers(keyBlob) else {
                    log("\(requester): ssh-add -d: this agent offers no such key")
                    return .failure
                }
                offered.remove([keyBlob])
                log("\(requester): stopped offering a key (it stays sealed in the vault)")
                return .success
            } catch {
                log("\(requester): ssh-add -d: \(error.message)")
                return .failure
            }
        case .removeAll:
            do {
                offered.remove(try await requests.sshList().map { [UInt8]($0.publicKey) })
                log("\(requester): stopped offering every key (they stay sealed in the vault)")
                return .success
            } catch {
                log("\(requester): ssh-add -D: \(error.message)")
                return .failure
            }
        case .lock:
            // The agent's lock is the vault's: every key stops signing until it is unlocked.
            do {
                _ = try await Requester.actingFor(requester.description) { () async throws(ServiceError) in try await requests.lock() }
                log("\(requester): locked the vault")
                return .success
            } catch {
                log("\(requester): lock failed: \(error.message)")
                return .failure
            }
        case .unlock(let passphrase):
            let interaction = AgentInteraction(terminal: nil, console: console, passphrase: passphrase)
            do {
                _ = try await Requester.actingFor(requester.description) { () async throws(ServiceError) in
                    try await requests.unlock(onlyIfDue: false, interaction: interaction)
                }
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

    /// `ssh-add FILE`: the key is sealed into the vault under its comment, and from then
    /// on signs like a key made there (any enrolled finger, `-c` a touch every time). A key
    /// the vault already holds is offered again (after `ssh-add -d`). With `-t` the agent
    /// offers it for that long; it stays sealed in the vault, as a key file stays on disk.
    func add(_ addition: AgentKeyAddition, requester: ClientProcess) async -> AgentResponse {
        let fresh = addition.requiresConfirmation
        let lifetime = addition.lifetime.map { Duration.seconds(Int64($0)) }
        let blob = addition.publicKey.blob
        if let held = try? await requests.sshList(), held.contains(where: { [UInt8]($0.publicKey) == blob }) {
            offered.offer(blob, for: lifetime)
            log("\(requester): the key is already sealed in the vault; offered again"
                + (lifetime.map { " for \($0.components.seconds) s" } ?? ""))
            return .success
        }
        let name = addition.comment.isEmpty
            ? "ssh-key-" + addition.publicKey.blob.suffix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            : addition.comment
        // OpenSSH sends an Ed25519 seed and public key together; the vault keeps the seed
        // alone (a P-256 scalar is 32 bytes already).
        let seed = addition.privateKey.withUnsafeBytes { SecretBytes(copying: $0.prefix(32)) }
        do {
            let report = try await Requester.actingFor(requester.description) { () async throws(ServiceError) in
                try await requests.sshAdd(name, publicKey: Data(blob), seed: { seed }, policy: "biometry-any", fresh: fresh)
            }
            offered.offer(blob, for: lifetime)
            log("\(requester): sealed SSH key '\(StoredText.escaped(report.name))' (\(report.fingerprint)) into the vault"
                + (fresh ? "; every signature needs a touch" : "")
                + (lifetime.map { "; offered for \($0.components.seconds) s" } ?? ""))
            return .success
        } catch {
            log("\(requester): the key was not added: \(error.message)")
            return .failure
        }
    }

    /// What Touchgate's security-key provider (libtouchgate-sk.so, inside ssh-sk-helper)
    /// asks: make a key in the vault, or sign with one. The service decides both; a refusal
    /// is an extension failure, and the reason goes to the requester's terminal.
    func securityKey(_ name: String, _ contents: [UInt8], requester: ClientProcess) async -> AgentResponse {
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
                let made = try await Requester.actingFor(requester.description) { () async throws(ServiceError) in
                    try await requests.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: user, application: application,
                                                                                        flags: flags.rawValue))
                }
                let shown = StoredText.escaped(made.key.name)
                log("\(requester): made security key '\(shown)' (\(made.key.fingerprint)) in the vault")
                interaction.tell("touchgate agent: made security key '\(shown)' in the vault; every signature asks for "
                                 + "the finger")
                return .extensionReply(SecurityKeyReply.enrolled(publicKey: [UInt8](made.rawPublicKey),
                                                                 keyHandle: [UInt8](made.keyHandle),
                                                                 flags: SecurityKeyFlags(rawValue: made.flags)).contents)
            case .sign(let algorithm, let application, let keyHandle, let flags, let data):
                try Self.requireEd25519(algorithm)
                let signed = try await Requester.actingFor(requester.description) { () async throws(ServiceError) in
                    try await requests.sshSkSign(SSHSecurityKeySignRequest(application: application,
                                                                                    keyHandle: Data(keyHandle),
                                                                                    flags: flags.rawValue, data: Data(data)),
                                                          interaction: interaction)
                }
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
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        var names: [String] = []
        var hashed = 0
        for path in [home + "/.ssh/known_hosts", home + "/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts"] {
            guard let handle = FileHandle(forReadingAtPath: path) else { continue }
            defer { try? handle.close() }
            guard let data = try? handle.read(upToCount: 1 << 20) else { continue }
            let found = KnownHosts.names(for: hostKey, in: String(decoding: data, as: UTF8.self))
            names += found.names.filter { !names.contains($0) }
            hashed += found.hashedEntries
        }
        return (names, hashed)
    }

    /// Writes all of `bytes`; false when the client is gone.
    static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// The terminal a client process writes its errors to, where the person who ran it
    /// reads them (`ssh`, `ssh-keygen -Y sign` and git all leave standard error on it).
    static func terminal(of pid: Int32) -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/2"),
              target.hasPrefix("/dev/pts/") || target.hasPrefix("/dev/tty") else { return nil }
        return target
    }
}

/// The process at the other end of a connection, described when a request first needs it:
/// a listing needs neither its process chain nor its terminal, and reading them from /proc
/// was most of what a listing cost. Used by the one task that serves the connection.
final class ClientProcess: CustomStringConvertible {
    let pid: Int32
    init(pid: Int32) { self.pid = pid }
    /// The process chain, as the log and the audit record name the requester.
    lazy var description = HelperRequester.describe(helper: "touchgate agent", pid: pid)
    /// Where the person who ran the client reads its errors.
    lazy var terminal = SSHAgentServer.terminal(of: pid)
}

/// One client's connection, read and written on a thread of its own: reads and sends
/// block, and a client that sends half a message, or never reads its answers, then holds
/// only its own thread (and a send only ``SSHAgentServer/sendTimeoutSeconds``), never one of
/// the few the cooperative pool has for every client. The next message is read only once
/// the last one is answered, so a client that floods requests gets no queue in the agent.
///
/// `@unchecked Sendable`: `answer` is only touched under `lock`; the thread and the task
/// hand it over through `answered`.
final class AgentConnection: @unchecked Sendable {
    enum Frame: Sendable {
        case body([UInt8])
        case failure(SSHWireError)
    }

    let descriptor: Int32
    private let lock = NSLock()
    private let answered = DispatchSemaphore(value: 0)
    /// The answer to send, or nil to end the connection.
    private var answer: [UInt8]?

    /// Takes `descriptor`, which the connection's thread closes when it ends.
    init(descriptor: Int32, sendTimeoutSeconds: Int) {
        self.descriptor = descriptor
        var timeout = timeval(tv_sec: sendTimeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The client's messages, until it closes the connection, sends one over the limit or
    /// stops reading; each must be answered (``reply(_:)``) before the next is read.
    func messages() -> AsyncStream<Frame> {
        AsyncStream { continuation in
            let thread = Thread { [self] in
                defer {
                    continuation.finish()
                    close(descriptor)
                }
                while true {
                    guard let header = Self.readExactly(descriptor, 4) else { return }
                    let length: Int
                    do throws(SSHWireError) {
                        // The length prefix alone: the body it announces, or a limit passed.
                        switch try AgentFrame.scan(header) {
                        case .incomplete(let needed): length = needed
                        case .complete: length = 0  // an empty message, answered as a malformed one
                        }
                    } catch {
                        continuation.yield(.failure(error))
                        return
                    }
                    guard let body = length == 0 ? [] : Self.readExactly(descriptor, length) else { return }
                    continuation.yield(.body(body))
                    answered.wait()
                    guard let answer = lock.withLock({ answer }), SSHAgentServer.write(answer, to: descriptor) else { return }
                }
            }
            thread.name = "touchgate-agent-client"
            thread.start()
        }
    }

    /// The first message, when the client has sent all of it already (a body of at most
    /// ``inlineLimit`` bytes), read without waiting; else nil, with nothing read, for the
    /// thread of ``messages()`` to read (and to report a malformed length). Call before
    /// ``messages()``.
    func readyMessage() -> [UInt8]? {
        var header = [UInt8](repeating: 0, count: 4)
        guard recv(descriptor, &header, 4, Int32(MSG_PEEK | MSG_DONTWAIT)) == 4,
              case .incomplete(let length)? = try? AgentFrame.scan(header), length <= Self.inlineLimit else { return nil }
        var frame = [UInt8](repeating: 0, count: 4 + length)
        guard recv(descriptor, &frame, frame.count, Int32(MSG_PEEK | MSG_DONTWAIT)) == frame.count,
              recv(descriptor, &frame, frame.count, Int32(MSG_DONTWAIT)) == frame.count else {
            _ = frame.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            return nil
        }
        defer { _ = frame.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        return Array(frame[4...])
    }

    /// The longest first message ``readyMessage()`` reads (a listing or a signature request
    /// is far shorter; a larger one goes to the thread).
    static let inlineLimit = 16 * 1024

    /// Sends `answer` to the client and lets the next message be read.
    func reply(_ answer: [UInt8]) {
        lock.withLock { self.answer = answer }
        answered.signal()
    }

    /// Ends the connection, if its thread still waits for an answer.
    func finish() {
        lock.withLock { answer = nil }
        answered.signal()
    }

    private static func readExactly(_ descriptor: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let read = bytes[offset...].withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { return nil }
            offset += read
        }
        return bytes
    }
}

/// The agent's side of a signature: it has no terminal of its own, so what the service
/// says (touch the reader to sign …) goes to its log and to the terminal of the program
/// that asked; it cannot ask for a passphrase or a confirmation.
struct AgentInteraction: Interaction {
    let terminal: String?
    let console: Console
    /// The passphrase the client sent (`ssh-add -X`), the only one the agent can give.
    let given: SecretBytes?

    init(terminal: String?, console: Console, passphrase: SecretBytes? = nil) {
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
        let shown = StoredText.escaped(message)
        guard let terminal else { return }
        let descriptor = open(terminal, O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        Console.write(shown + "\r\n", to: descriptor)
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

/// Which of the vault's keys this agent offers. Every key is offered until `ssh-add -d` or
/// `-D` removes it from this agent or the lifetime `ssh-add -t` gave runs out; adding it
/// again offers it again. Kept in memory, as OpenSSH's agent keeps its keys: a new agent
/// offers every key of the vault.
final class OfferedKeys: Sendable {
    private struct State {
        var removed: Set<[UInt8]> = []
        var until: [[UInt8]: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())

    static let withheldWords = "that key was removed from this agent (ssh-add -d, -D or a lifetime from ssh-add -t); "
        + "it is still sealed in the vault: ssh-add its key file again, or restart touchgate agent"

    /// Whether the key with public blob `blob` is offered now.
    func offers(_ blob: [UInt8]) -> Bool {
        state.withLock { state in
            if state.removed.contains(blob) { return false }
            guard let until = state.until[blob] else { return true }
            guard ContinuousClock.now < until else {
                state.until[blob] = nil
                state.removed.insert(blob)
                return false
            }
            return true
        }
    }

    /// Stops offering these keys.
    func remove(_ blobs: [[UInt8]]) {
        state.withLock { state in
            for blob in blobs {
                state.removed.insert(blob)
                state.until[blob] = nil
            }
        }
    }

    /// Offers the key again, for `lifetime` or until removed.
    func offer(_ blob: [UInt8], for lifetime: Duration?) {
        state.withLock { state in
            state.removed.remove(blob)
            state.until[blob] = lifetime.map { ContinuousClock.now + $0 }
        }
    }
}
