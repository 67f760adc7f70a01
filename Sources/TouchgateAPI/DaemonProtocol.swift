import FoundationEssentials

/// A message from a client.
public struct ClientMessage: Codable, Sendable, Equatable {
    /// What the message is.
    public enum Kind: String, Codable, Sendable {
        /// Starts a request: ``operation`` with ``arguments``.
        case request
        /// Answers the daemon's last ``DaemonMessage/Kind/ask``.
        case answer
        /// Cancels the running request.
        case cancel
    }

    /// Protocol version the client speaks.
    public var version: Int
    /// What the message is.
    public var kind: Kind
    /// The request this message belongs to, chosen by the client, increasing.
    public var id: UInt64
    /// For a request: the operation.
    public var operation: DaemonOperation?
    /// For a request: its arguments.
    public var arguments: RequestArguments?
    /// For an answer to a confirmation.
    public var confirmed: Bool?
    /// For an answer: the person cancelled instead of answering.
    public var declined: Bool?
    /// For an answer: why the client could not ask (no terminal, unreadable input).
    public var error: ServiceError?
    /// How many raw secret bytes follow this line.
    public var secretLength: Int?
    /// How many open files came with this line (`SCM_RIGHTS`, sent with its first byte).
    public var descriptors: Int?

    /// A message of `kind` for request `id`.
    public init(kind: Kind, id: UInt64) {
        version = DaemonProtocol.version
        self.kind = kind
        self.id = id
    }
}

/// The operations, one per use case; the names are the protocol's.
public enum DaemonOperation: String, Codable, Sendable, CaseIterable {
    case status, initialize = "init", unlock, lock
    case passphraseChange = "passphrase.change"
    case enroll
    case printsList = "prints.list", printsDelete = "prints.delete", printsDeleteOrphans = "prints.delete-orphans"
    case printsClear = "prints.clear", importFprintd = "import.fprintd"
    case verify, identify
    case devices, capture
    case policyShow = "policy.show", policySet = "policy.set"
    case repair
    /// The TPM binding of the caller's vault: its state, binding it, and binding it again
    /// with the recovery key.
    case tpmStatus = "tpm.status", tpmEnroll = "tpm.enroll", tpmRecover = "tpm.recover"
    case secretGet = "secret.get", secretAdd = "secret.add", secretList = "secret.list", secretRm = "secret.rm"
    /// Lets an executable read an item without a touch of its own (`touchgate secret allow`).
    case secretAllow = "secret.allow"
    /// A touch that approves exactly one command with its secrets, or one action an agent
    /// describes, answered with a signed receipt (`touchgate run`, `touchgate mcp`, hooks).
    case approve
    /// What `touchgate agent`'s Secret Service provider asks for an application on the
    /// session bus: find items by their attributes, store one, read one.
    case secretServiceSearch = "secret-service.search", secretServiceStore = "secret-service.store"
    case secretServiceRead = "secret-service.read", secretServiceDelete = "secret-service.delete"
    /// Copies the items another Secret Service provider holds (read by the client) into
    /// the vault, after one touch, all or nothing.
    case importSecretService = "import.secret-service"
    case auditShow = "audit.show", auditCount = "audit.count", auditVerify = "audit.verify"
    case auditExport = "audit.export", auditPrune = "audit.prune", auditPublicKey = "audit.public-key"
    /// Ships audit trails to the fleet collector named in the daemon's own fleet
    /// configuration (never one the client names): the caller's trail, or for root every
    /// user's. The result is an ``AuditShipmentsReport``.
    case auditShip = "audit.ship"
    /// Moves the caller's personal (in-process) store into the daemon's store for the
    /// caller's own uid. The request carries two descriptors, opened read-only by the
    /// client: a consistent copy of its `touchgate.sqlite` (no `-wal` beside it), then its
    /// `audit.key`; `path` says where the personal store was (recorded in the audit
    /// trail as the client's claim). The daemon copies them into a directory of its own,
    /// asks the passphrase, verifies the audit chain and the authenticated state, records
    /// the migration in the chain, moves the copy into place and holds the key; the
    /// result is a ``MigrationReport``. Refused (`already-initialized`) when the caller
    /// already has a vault or prints in the daemon.
    case migrate
    case sshKeygen = "ssh.keygen", sshAdd = "ssh.add", sshList = "ssh.list", sshSign = "ssh.sign"
    /// What Touchgate's OpenSSH security-key provider asks (through the agent): make an
    /// `sk-ssh-ed25519` key in the vault, and sign with one, FIDO-style.
    case sshSkEnroll = "ssh.sk-enroll", sshSkSign = "ssh.sk-sign"
    /// What the passkey authenticator asks (CTAP 2.1): a user verification for one ceremony
    /// at one site, answered with a single-use ticket; a new credential, assertions, each
    /// with such a ticket; and the listing, removal and renaming `touchgate passkey` and
    /// credential management use.
    case passkeyVerify = "passkey.verify", passkeyMake = "passkey.make", passkeyAssert = "passkey.assert"
    case passkeyList = "passkey.list", passkeyDelete = "passkey.delete", passkeyUpdate = "passkey.update"
    case passkeyPrompts = "passkey.prompts"
    /// Which of the vault's SSH keys the agents offer: withdrawn (`ssh-add -d`, `-D`), offered
    /// again, for a while (`ssh-add -t`); recorded.
    case sshOffer = "ssh.offer"
    /// A touch that approves one use of a key an agent asks confirmation for (`ssh-add -c`,
    /// through `touchgate askpass`), recorded as that approval.
    case sshConfirm = "ssh.confirm"
    /// A match the daemon answered that the PAM module did not use (mode=either: the prompt
    /// ended too long after it), recorded as such, so the trail shows no login that did not happen.
    case verifyUnused = "verify.unused"
}

/// The arguments any request may carry, beside the operation's own (its
/// ``OperationSpec/Arguments``, in the same JSON object): who it is for, how the person can
/// be asked, and what a helper says it acts for.
public struct RequestArguments: Codable, Sendable, Equatable {
    /// A user name (for another user: needs root); the service served is that user's.
    public var user: String?
    /// Confirmed in advance (`--yes`).
    public var assumeYes: Bool?
    /// Whether the person can be asked again after a wrong passphrase (a terminal can;
    /// a descriptor gives one line). For `passphrase.change`: about the current passphrase.
    public var canAskAgain: Bool?
    /// The program a helper (askpass, git credential helper, pinentry) acts for, as the
    /// client states it; added to the request's audit records after the client process the
    /// daemon identified.
    public var requester: String?
    /// Any operation but `migrate` (the PAM module sets it on `verify` and `secret.get`):
    /// refuse with `remote-session` when systemd-logind counts the connecting process's
    /// session as remote. The daemon looks the session up from the peer's pid
    /// (`SO_PEERCRED`), never from anything the request says.
    public var localOnly: Bool?
    /// How long the client waits for the answer, in seconds (the PAM module sends its
    /// `timeout=`): the daemon neither queues the request for the reader nor holds the reader
    /// for it longer than that, and refuses with `limit` rather than keep it waiting in vain.
    public var waitSeconds: Int?

    /// No arguments.
    public init() {}
}

/// A request's arguments as one JSON object: the common ones and the operation's own.
public struct MergedArguments<Own: Encodable & Sendable>: Encodable, Sendable {
    public let common: RequestArguments
    public let own: Own

    public init(common: RequestArguments, own: Own) {
        self.common = common
        self.own = own
    }

    public func encode(to encoder: any Encoder) throws {
        // Both write into the one keyed container of this encoder: one object.
        try common.encode(to: encoder)
        try own.encode(to: encoder)
    }
}

/// A request as a client sends it, with the operation's own arguments typed.
public struct RequestMessage<Own: Encodable & Sendable>: Encodable, Sendable {
    public let version: Int
    public let kind: ClientMessage.Kind
    public let id: UInt64
    public let operation: DaemonOperation
    public let arguments: MergedArguments<Own>
    public let descriptors: Int?

    public init(id: UInt64, operation: DaemonOperation, arguments: MergedArguments<Own>, descriptors: Int?) {
        version = DaemonProtocol.version
        kind = .request
        self.id = id
        self.operation = operation
        self.arguments = arguments
        self.descriptors = descriptors
    }
}

/// The operation's own arguments of a request, read from the same object as the common ones.
public struct OwnArguments<Own: Decodable & Sendable>: Decodable, Sendable {
    public let arguments: Own?
}

/// A message from the daemon.
public struct DaemonMessage: Codable, Sendable, Equatable {
    /// What the message is.
    public enum Kind: String, Codable, Sendable {
        /// The first message on a connection: the versions the daemon speaks.
        case hello
        /// Progress or a prompt of the running request.
        case event
        /// The daemon needs an answer: ``question``.
        case ask
        /// The request succeeded; sent as a ``ResultMessage`` holding the report.
        case result
        /// The request failed; ``error`` says why.
        case failure
        /// A line of output the client writes to its standard output (`audit.export`).
        case output
    }

    /// A question the daemon asks the person through the client.
    public struct Question: Codable, Sendable, Equatable {
        /// `passphrase`, `new-passphrase`, `confirm` or `secret-value` (the value to store).
        public var kind: String
        /// What to show.
        public var prompt: String
        /// For a passphrase: the previous one was wrong.
        public var again: Bool?
        /// For a confirmation: what is lost (item names).
        public var details: [String]?

        /// A question.
        public init(kind: String, prompt: String) {
            self.kind = kind
            self.prompt = prompt
        }
    }

    /// What the message is.
    public var kind: Kind
    /// The request it belongs to (0 for hello and for failures before any request).
    public var id: UInt64
    /// Hello: the protocol versions the daemon speaks.
    public var versions: [Int]?
    /// Hello from touchgate agent: the store it hosts, as ``Invocation/storeIdentity(of:)``
    /// names it, so that a command with another data directory does not use it.
    public var store: String?
    /// Event: the event.
    public var event: InteractionEvent?
    /// Ask: the question.
    public var question: Question?
    /// Failure: the error.
    public var error: ServiceError?
    /// Output: the text.
    public var text: String?
    /// How many raw secret bytes follow this line (a released secret's value).
    public var secretLength: Int?

    /// A message of `kind` for request `id`.
    public init(kind: Kind, id: UInt64) {
        self.kind = kind
        self.id = id
    }
}

/// The daemon's ``DaemonMessage/Kind/result`` with its report: the client, which knows
/// what it asked for, decodes the line again as `ResultMessage<ThatReport>`.
public struct ResultMessage<Report: Codable & Sendable>: Codable, Sendable {
    /// Always ``DaemonMessage/Kind/result``.
    public var kind: DaemonMessage.Kind
    /// The request it answers.
    public var id: UInt64
    /// The report, as the operation's `--json` output carries it.
    public var result: Report
    /// How many raw secret bytes follow this line (a released secret's value).
    public var secretLength: Int?

    /// The result of request `id`.
    public init(id: UInt64, result: Report, secretLength: Int? = nil) {
        kind = .result
        self.id = id
        self.result = result
        self.secretLength = secretLength
    }
}

/// A count, for operations whose answer is one number.
public struct CountReport: Codable, Sendable, Equatable {
    /// How many.
    public var count: Int

    /// A count.
    public init(count: Int) { self.count = count }
}

extension DaemonProtocol {
    /// Decodes one line into a message of type `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from line: [UInt8]) throws(FrameError) -> T {
        guard line.first == UInt8(ascii: "{") else { throw .malformed("not a JSON object") }
        do {
            return try WireCoding.decoder().decode(T.self, from: Data(line))
        } catch let DecodingError.keyNotFound(key, _) {
            throw .malformed("missing \(WireCoding.kebab(key.stringValue))")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw .malformed("wrong type at \(context.codingPath.map { WireCoding.kebab($0.stringValue) }.joined(separator: "."))")
        } catch let DecodingError.dataCorrupted(context) {
            let path = context.codingPath.map { WireCoding.kebab($0.stringValue) }.joined(separator: ".")
            throw .malformed(path.isEmpty ? "not JSON" : "bad value at \(path)")
        } catch {
            throw .malformed("not JSON")
        }
    }

    /// `message` as a line, newline included.
    public static func encode<T: Encodable>(_ message: T) -> [UInt8] {
        Array(WireCoding.line(message).utf8) + [UInt8(ascii: "\n")]
    }

    /// The line of a ``ResultMessage`` whose report is already encoded (`report`, one JSON
    /// value as ``WireCoding/line(_:)`` writes it): the same bytes as encoding the message
    /// (keys sorted: `id`, `kind`, `result`, `secret-length`), which a test keeps true.
    /// For a daemon that answers the same report again without encoding it again.
    public static func resultLine(id: UInt64, report: [UInt8], secretLength: Int? = nil) -> [UInt8] {
        var line = Array("{\"id\":\(id),\"kind\":\"result\",\"result\":".utf8)
        line.reserveCapacity(line.count + report.count + 32)
        line += report
        if let secretLength { line += Array(",\"secret-length\":\(secretLength)".utf8) }
        line += Array("}\n".utf8)
        return line
    }
}
