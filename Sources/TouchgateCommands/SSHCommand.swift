import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateSSHAgent
import TouchgateClient
import TouchgateSSH
import TouchgateSocket
import TouchgateTerminal
import Glibc

/// `touchgate ssh`: SSH keys that live in the vault and sign only through its policy.
struct SSH: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh",
        abstract: "SSH keys kept in the vault: each signature needs what the key's policy asks for.",
        discussion: """
            A key made here never leaves the vault: touchgate agent signs with it, through the \
            SSH agent protocol, after a touch that names what is signed (a login as USER to the \
            host with key SHA256:…, a git commit, a file). Remove a key with touchgate secret rm NAME.
            """,
        subcommands: [Keygen.self, List.self, Offer.self])

    /// `touchgate ssh keygen NAME`.
    struct Keygen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Make an SSH key (Ed25519, or ECDSA P-256) in the vault and print its public key.",
            discussion: """
                Prints the line to add to a server's ~/.ssh/authorized_keys on standard output. \
                Needs the vault unlocked.
                """)

        @OptionGroup var common: CommonOptions

        @Argument(help: "The key's name (also its comment in authorized_keys).")
        var name: String

        @Option(help: "What each signature needs: an access policy (biometry-any, biometry-current-set, passphrase, a|b, a&b).")
        var policy = "biometry-any"

        @Flag(help: "Every signature needs a new touch (no reuse window).")
        var fresh = false

        @Option(help: ArgumentHelp("The key type: ed25519, or ecdsa (NIST P-256, for servers that want it).",
                                   valueName: "TYPE"))
        var type = "ed25519"

        func run() async throws {
            let (name, policy, fresh, type) = (name, policy, fresh, type)
            try await CommandRunner.run(json: common.json) { console in
                let typeName: String
                switch type {
                case "ed25519", SSHPublicKey.ed25519TypeName: typeName = SSHPublicKey.ed25519TypeName
                case "ecdsa", SSHPublicKey.ecdsaP256TypeName: typeName = SSHPublicKey.ecdsaP256TypeName
                default: throw ServiceError(.usage, "--type is ed25519 or ecdsa, not '\(StoredText.escaped(type))'")
                }
                let report = try await service.sshKeygen(name, type: typeName, policy: policy, fresh: fresh)
                if !console.json {
                    Console.write("Made SSH key '\(StoredText.escaped(report.name))' (\(report.type) \(report.fingerprint), "
                                  + "policy \(report.policy)). Add this line to a server's ~/.ssh/authorized_keys:\n", to: 2)
                }
                console.result("ssh-key", report, text: report.authorizedKey)
                return ExitStatus.success
            }
        }
    }

    /// `touchgate ssh offer NAME`.
    struct Offer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "offer",
            abstract: "Have the agents offer a vault key again (after ssh-add -d, -D or -t), or stop offering it.",
            discussion: """
                Which keys touchgate agent offers to ssh is kept with the vault and recorded in the                 audit trail, as ssh-add -d, -D and -t change it; a key made here has no file to                 ssh-add again, so this offers it. Needs the vault unlocked.
                """)

        @OptionGroup var common: CommonOptions

        @Argument(help: "The key's name (touchgate ssh list).")
        var name: String

        @Option(help: ArgumentHelp("Offer it for this long only, as ssh-add -t does (90, 10m, 2h).", valueName: "TIME"))
        var lifetime: String?

        @Flag(help: "Stop offering it instead, as ssh-add -d does (it stays sealed in the vault).")
        var withdraw = false

        func validate() throws {
            if withdraw && lifetime != nil { throw ValidationError("--lifetime offers a key; it cannot go with --withdraw") }
        }

        func run() async throws {
            let (name, lifetime, withdraw) = (name, lifetime, withdraw)
            try await CommandRunner.run(json: common.json) { console in
                let seconds = try lifetime.map { text throws(ServiceError) -> Int in
                    // A bare number is seconds, as ssh-add -t takes it.
                    guard let length = Int(text).map(TimeInterval.init) ?? TimeArgument.secondsAgo(text), length > 0 else {
                        throw ServiceError(.usage, "--lifetime takes a time such as 90, 10m or 2h, not '\(StoredText.escaped(text))'")
                    }
                    return Int(length)
                }
                guard let key = try await service.sshList().first(where: { $0.name == name }) else {
                    throw ServiceError(.notFound, "the vault holds no SSH key named '\(StoredText.escaped(name))'; "
                                       + "touchgate ssh list shows them")
                }
                let change = withdraw ? SSHOfferChange.withdraw([key.publicKey]) : .offer(key.publicKey, lifetime: seconds)
                let reports = try await service.sshOffer(change)
                let report = reports.first { $0.publicKey == key.publicKey } ?? key
                let words = !report.isOffered ? "no longer offered to the agents (still sealed in the vault)"
                    : "offered to the agents" + (seconds.map { " for \($0) s" } ?? "")
                console.result("ssh-key", report, text: "SSH key '\(StoredText.escaped(report.name))' \(words).")
                return ExitStatus.success
            }
        }
    }

    /// `touchgate ssh list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the vault's SSH keys: name, fingerprint, policy.",
            discussion: "--json also gives each public key and its authorized_keys line.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let keys = try await service.sshList()
                console.result("ssh-keys", SSHKeyList(keys: keys), text: keys.isEmpty ? "No SSH keys (make one: touchgate ssh keygen NAME)."
                               : keys.map { "\(StoredText.escaped($0.name))  \($0.fingerprint)  \($0.policy)"
                                   + ($0.fresh ? " (fresh touch)" : "")
                                   + ($0.type == SecurityKeySignedMessage.keyTypeName ? " (security key, through libtouchgate-sk)" : "") }
                                   .joined(separator: "\n"))
                return ExitStatus.success
            }
        }
    }
}

/// `touchgate agent`: the SSH agent over the vault's keys.
struct Agent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Serve the vault's SSH keys to ssh, git and ssh-keygen through the SSH agent protocol.",
        discussion: """
            Runs in the foreground until stopped, or is started by systemd at the first \
            connection (touchgate-agent.socket, a user unit). It prints the shell line that \
            points SSH_AUTH_SOCK at its socket ($XDG_RUNTIME_DIR/touchgate/ssh-agent.sock \
            unless --socket is given), which only you can reach. Each signature needs what the key's \
            policy asks for; the prompt goes to the terminal of the program that asked, and the \
            audit trail names the program and what was signed. Keys are made with \
            touchgate ssh keygen or sealed into the vault by ssh-add FILE. In the personal mode \
            it also hosts your store for your touchgate commands, on a second socket \
            ($XDG_RUNTIME_DIR/touchgate/socket, or --service-socket), with the unlocked vault \
            key in its own memory instead of the kernel keyring; with touchgated it forwards \
            to the daemon.
            """)

    @OptionGroup var common: CommonOptions

    @Option(help: "The socket to listen on.")
    var socket: String?

    @Option(help: ArgumentHelp("Where your touchgate commands reach the store it hosts (personal mode; default: "
                               + "\"socket\" beside the agent's socket).", valueName: "PATH"))
    var serviceSocket: String?

    @Flag(help: ArgumentHelp("Also serve the Secret Service (org.freedesktop.secrets) on the session bus, for "
                             + "libsecret, secret-tool and Python's keyring (touchgate secret-service)."))
    var secretService = false

    @Flag(help: ArgumentHelp("Also be your passkey authenticator: a USB security key on /dev/uhid (which you must be "
                             + "given) for as long as the agent runs, over the store it hosts (touchgate passkey)."))
    var passkeys = false

    @Flag(help: ArgumentHelp("Start the agent in the background unless one already listens, print the SSH_AUTH_SOCK "
                             + "line, and return: for a session without systemd (eval \"$(touchgate agent --launch)\" "
                             + "in ~/.profile). Its log goes to agent.log beside the socket."))
    var launch = false

    func run() async throws {
        let (chosen, chosenService, launch, secretService, passkeys) = (socket, serviceSocket, launch, secretService, passkeys)
        try await CommandRunner.run(json: common.json) { console in
            let path = try Self.socketPath(chosen)
            if passkeys, Invocation.daemonSocket() != nil {
                throw ServiceError(.usage, "with touchgated, your passkey device is touchgated's (sudo touchgate passkey "
                                   + "enable): leave out --passkeys")
            }
            if launch {
                let pid = try await Self.launch(socket: path, chosen: chosen, service: chosenService)
                console.result("agent", AgentReport(sshAuthSock: path, pid: pid),
                               text: "SSH_AUTH_SOCK=\(path); export SSH_AUTH_SOCK;"
                                   + (pid.map { "\nTOUCHGATE_AGENT_PID=\($0); export TOUCHGATE_AGENT_PID;" } ?? ""))
                return ExitStatus.success
            }
            // Started by touchgate-agent.socket, which listens at the same places: the SSH
            // socket first, the service socket second.
            let activated = chosen == nil ? UnixListener.allFromSystemd() : []
            let listener: UnixListener
            if let first = activated.first {
                listener = first
            } else {
                do {
                    listener = try UnixListener.bind(path: path, mode: 0o600)
                } catch {
                    throw ServiceError(.usage, "cannot listen at \(path): \(error); is another agent running there?")
                }
            }
            console.result("agent", AgentReport(sshAuthSock: path),
                           text: "SSH_AUTH_SOCK=\(path); export SSH_AUTH_SOCK;")
            let log: @Sendable (String) -> Void = { line in console.event(InteractionEvent(.notice, line)) }
            let requests: RequestsForCaller
            var hosting: (any AgentHosting)?
            var record: (socket: String, contents: String)?
            if let daemon = Invocation.daemonSocket() {
                // touchgated holds the keys and decides; this door only forwards, saying what it
                // found of its caller (the daemon's own gate sees this agent as the caller).
                requests = { caller in DaemonClient(socketPath: daemon, requester: caller.requester) }
            } else {
                let servicePath = chosenService ?? PathText.deletingLastComponent(of: path) + "/socket"
                let serviceListener = activated.count > 1 ? activated[1] : try Self.bindService(servicePath)
                let hosted = ServiceChoice.requiredHost.personalAgent(serviceSocket: serviceListener, log: log)
                record = Self.recordStore(beside: servicePath)
                if await hosted.takeOverKeyringKey() {
                    log("took the unlocked vault key out of the kernel keyring into this agent's memory")
                }
                requests = hosted.requests
                hosting = hosted
            }
            let server = try SSHAgentServer(requests: requests, hostedHere: hosting != nil, listener: listener,
                                             console: console)
            let hosted = hosting
            let served = Task { await hosted?.serve() }
            // Like gpg-agent: an agent whose store's directory went away or was made anew (a
            // home or a test's directory deleted), or whose socket was taken away, stops,
            // rather than serve nothing anyone can reach; the next command starts another.
            let watched = hosting == nil ? nil : Invocation.personalStoreDirectory(Invocation.environment, home: { nil })
            let watch = Task { [stamp = watched.flatMap(Invocation.storeIdentity(of:))] in
                let sockets = [path] + (activated.isEmpty ? [chosenService ?? PathText.deletingLastComponent(of: path) + "/socket"] : [])
                let bound = sockets.map(Self.inode(of:))
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(2))
                    let gone = watched.map { Invocation.storeIdentity(of: $0) != stamp } == true ? watched
                        : zip(sockets, bound).first { Self.inode(of: $0.0) != $0.1 }?.0
                    guard let gone else { continue }
                    log("\(gone) is gone or was replaced: stopping")
                    server.stop()
                    hosted?.stop()
                    return
                }
            }
            let keyring = secretService ? try Self.serveSecretService(requests: requests, console: console) : nil
            let passkeyDevice = passkeys ? try PasskeyCommand.Serve.device(requests: requests, console: console) : nil
            await withTaskCancellationHandler {
                await server.run()
            } onCancel: {
                server.stop()
                hosted?.stop()
            }
            watch.cancel()
            keyring?.stop()
            await passkeyDevice?.stop()
            hosted?.stop()
            await served.value
            if let record, Invocation.recordedStore(beside: record.socket) == record.contents {
                unlink(Invocation.storeRecord(of: record.socket))
            }
            return ExitStatus.success
        }
    }

    /// The Secret Service on the session bus, over the agent's requests; nil (and said in the
    /// log, naming the program) when another owns the name.
    static func serveSecretService(requests: @escaping RequestsForCaller,
                                   console: Console) throws(ServiceError) -> (any SecretServiceHosting)? {
        let log: @Sendable (String) -> Void = { line in console.event(InteractionEvent(.notice, line)) }
        guard let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            throw ServiceError(.usage, "--secret-service needs the session bus, and DBUS_SESSION_BUS_ADDRESS is not set")
        }
        let provider = ServiceChoice.requiredHost.secretService(requests: requests) { console.event($0) }
        if let refusal = try provider.start(address: address).refusal {
            log(refusal)
            return nil
        }
        log("serving the Secret Service (org.freedesktop.secrets) on the session bus")
        return provider
    }

    /// Starts this program's agent detached, unless one listens at `socket` already; waits
    /// until it listens. The new agent's pid, or nil when one was running.
    static func launch(socket: String, chosen: String?, service: String?) async throws(ServiceError) -> Int32? {
        if Invocation.isListening(socket) { return nil }
        var arguments: [String] = []
        if let chosen { arguments += ["--socket", chosen] }
        if let service { arguments += ["--service-socket", service] }
        let (pid, log) = try spawnDetached(arguments, logDirectory: PathText.deletingLastComponent(of: socket))
        var waited = 0
        while !Invocation.isListening(socket), waited < 250 {
            try? await Task.sleep(for: .milliseconds(20))
            waited += 1
        }
        guard waited < 250 else {
            throw ServiceError(.error, "touchgate agent (pid \(pid)) did not start listening at \(socket); see \(log)")
        }
        return pid
    }

    /// Starts this program as `touchgate agent` with `arguments`, detached (its own session,
    /// no terminal), its log appended to `agent.log` in `logDirectory`: the pid and the log.
    static func spawnDetached(_ arguments: [String], logDirectory: String) throws(ServiceError) -> (pid: Int32, log: String) {
        guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw ServiceError(.error, "cannot find this program (/proc/self/exe) to start the agent")
        }
        let log = logDirectory + "/agent.log"
        let logDescriptor = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { if logDescriptor >= 0 { close(logDescriptor) } }
        let pid = DetachedProcess.spawn(program, ["touchgate", "agent"] + arguments, logDescriptor: logDescriptor)
        guard pid > 0 else {
            throw ServiceError(.error, "cannot start touchgate agent: \(String(cString: strerror(-pid)))")
        }
        return (pid, log)
    }

    /// Records beside the service socket which store this agent hosts (what its hello says),
    /// so that a command decides without a conversation (``Invocation/agentHostsThisStore(at:)``);
    /// written whole (a new file renamed over the old). Nil when it could not be written.
    static func recordStore(beside servicePath: String) -> (socket: String, contents: String)? {
        guard let contents = Invocation.storeRecordContents() else { return nil }
        let path = Invocation.storeRecord(of: servicePath)
        let staging = path + ".\(getpid())"
        do {
            try Array(contents.utf8).withUnsafeBytes { try PrivateFiles.create(staging, bytes: $0) }
        } catch {
            return nil
        }
        guard rename(staging, path) == 0 else {
            unlink(staging)
            return nil
        }
        return (servicePath, contents)
    }

    /// The inode of what is at `path` now (0: nothing).
    static func inode(of path: String) -> UInt {
        var status = stat()
        return lstat(path, &status) == 0 ? UInt(status.st_ino) : 0
    }

    /// The service socket at `path`, private to its user.
    static func bindService(_ path: String) throws(ServiceError) -> UnixListener {
        do {
            return try UnixListener.bind(path: path, mode: 0o600)
        } catch {
            throw ServiceError(.usage, "cannot listen at \(path): \(error); is another agent running there?")
        }
    }

    /// `chosen`, or the agent's place in the user's runtime directory (made private).
    static func socketPath(_ chosen: String?) throws -> String {
        if let chosen { return chosen }
        guard let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
            throw ServiceError(.usage, "XDG_RUNTIME_DIR is not set, so there is no private place for the socket; "
                               + "pass --socket PATH (in a directory only you can enter)")
        }
        let directory = runtime + "/touchgate"
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw ServiceError(.usage, "cannot make \(directory): \(String(cString: strerror(errno)))")
        }
        return directory + "/ssh-agent.sock"
    }
}

/// `{"keys": […]}`.
struct SSHKeyList: Encodable, Sendable {
    var keys: [SSHKeyReport]
}

/// `{"ssh-auth-sock": …}`, and with `--launch` the pid of an agent it started.
struct AgentReport: Encodable, Sendable {
    var sshAuthSock: String
    var pid: Int32?
}
