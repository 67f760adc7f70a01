public import FoundationEssentials

/// An SSH key kept in the vault: what may be shown of it (never its private part).
public struct SSHKeyReport: Codable, Sendable, Equatable {
    /// The item's name, which is also the key's comment.
    public var name: String
    /// The key's type as OpenSSH names it (`ssh-ed25519`).
    public var type: String
    /// The public key blob, as the SSH agent protocol and `authorized_keys` carry it.
    public var publicKey: Data
    /// The line to put in a server's `authorized_keys`: type, base64 blob, name.
    public var authorizedKey: String
    /// The key's fingerprint as `ssh-keygen -l` and `ssh-add -l` print it (`SHA256:…`).
    public var fingerprint: String
    /// What a signature needs (an access policy in string form).
    public var policy: String
    /// Whether every signature needs a new touch (no reuse window).
    public var fresh: Bool
    /// Whether the agents offer the key now: false once it was withdrawn (`ssh-add -d`, `-D`)
    /// or its lifetime (`ssh-add -t`) ran out, until it is offered again (`ssh-add FILE`,
    /// `touchgate ssh offer`). Absent (nil) in older reports: offered.
    public var offered: Bool?
    /// When a lifetime given with `ssh-add -t` runs out.
    public var offeredUntil: Date?

    /// A report.
    public init(name: String, type: String, publicKey: Data, authorizedKey: String, fingerprint: String,
                policy: String, fresh: Bool, offered: Bool? = nil, offeredUntil: Date? = nil) {
        self.name = name
        self.type = type
        self.publicKey = publicKey
        self.authorizedKey = authorizedKey
        self.fingerprint = fingerprint
        self.policy = policy
        self.fresh = fresh
        self.offered = offered
        self.offeredUntil = offeredUntil
    }

    /// Whether the agents offer it (an absent answer is yes).
    public var isOffered: Bool { offered != false }
}

/// A change to which of the vault's SSH keys the agents offer (`ssh.offer`): what `ssh-add
/// -d`, `-D`, `-t` and `ssh-add FILE` of a key the vault holds ask of touchgate agent, and
/// `touchgate ssh offer`. The service keeps it, so every agent of the user offers the same
/// keys and the trail records each change.
public struct SSHOfferChange: Codable, Sendable, Equatable {
    /// The keys, by their public blobs; empty with ``all``.
    public var keys: [Data]
    /// Every key of the vault (`ssh-add -D`).
    public var all: Bool?
    /// Offer them (again), or withdraw them.
    public var offered: Bool
    /// With `offered`: for this many seconds only (`ssh-add -t`).
    public var lifetime: Int?
    /// With `offered`: the hops the key may be used over (`ssh-add -h`); nil for none, so
    /// the key logs in from this machine only and never through a forwarded agent.
    public var destinations: [SSHDestination]?

    /// A change.
    public init(keys: [Data], all: Bool? = nil, offered: Bool, lifetime: Int? = nil, destinations: [SSHDestination]? = nil) {
        self.keys = keys
        self.all = all
        self.offered = offered
        self.lifetime = lifetime
        self.destinations = destinations
    }

    /// `ssh-add -d`: stop offering these keys.
    public static func withdraw(_ keys: [Data]) -> SSHOfferChange { SSHOfferChange(keys: keys, offered: false) }
    /// `ssh-add -D`: stop offering every key.
    public static let withdrawAll = SSHOfferChange(keys: [], all: true, offered: false)
    /// `ssh-add FILE` of a key the vault holds, or `touchgate ssh offer`: offer it again, for
    /// `lifetime` seconds when given.
    public static func offer(_ key: Data, lifetime: Int?, destinations: [SSHDestination]? = nil) -> SSHOfferChange {
        SSHOfferChange(keys: [key], offered: true, lifetime: lifetime, destinations: destinations)
    }
}

/// One hop a key may be used over, as `ssh-add -h` gives it (OpenSSH's
/// `restrict-destination-v00@openssh.com`): from a host (none: this machine) to a host,
/// each named and known by its host keys, optionally as one user there.
public struct SSHDestination: Codable, Sendable, Equatable {
    /// The host the hop starts from, as named to ssh-add; nil for this machine.
    public var fromHost: String?
    /// Its host key blobs (empty for this machine).
    public var fromKeys: [Data]
    /// The user the hop may log in as (a pattern with `*` and `?`); nil for any.
    public var toUser: String?
    /// The host the hop leads to, as named to ssh-add.
    public var toHost: String
    /// Its host key blobs: at least one.
    public var toKeys: [Data]

    public init(fromHost: String?, fromKeys: [Data], toUser: String?, toHost: String, toKeys: [Data]) {
        self.fromHost = fromHost
        self.fromKeys = fromKeys
        self.toUser = toUser
        self.toHost = toHost
        self.toKeys = toKeys
    }

    /// `first>user@second` or `second` (from this machine), names escaped.
    public var description: String { StoredText.hop(from: fromHost, user: toUser, to: toHost) }
}

/// A host's proof of the SSH session a signature is for, as OpenSSH's `ssh` gives it to
/// the agent (`session-bind@openssh.com`): the host key, the session identifier, the
/// host's signature over it, and whether the agent was reached through forwarding.
public struct SSHSessionBinding: Codable, Sendable, Equatable {
    /// The server's host key blob.
    public var hostKey: Data
    /// The session identifier (the key exchange's hash).
    public var sessionID: Data
    /// The host key's signature over the session identifier.
    public var signature: Data
    /// Whether the request came from another host through agent forwarding.
    public var forwarding: Bool
    /// The names the user's known_hosts gives the host key (read by the agent, which runs
    /// as the user; nil when it was not looked up).
    public var hostNames: [String]?
    /// How many known_hosts entries for the host key hide their names (hashed).
    public var hashedHostEntries: Int?

    /// A binding.
    public init(hostKey: Data, sessionID: Data, signature: Data, forwarding: Bool, hostNames: [String]? = nil,
                hashedHostEntries: Int? = nil) {
        self.hostKey = hostKey
        self.sessionID = sessionID
        self.signature = signature
        self.forwarding = forwarding
        self.hostNames = hostNames
        self.hashedHostEntries = hashedHostEntries
    }
}

/// A signature asked of a vault key through the SSH agent protocol.
public struct SSHSignRequest: Codable, Sendable, Equatable {
    /// The public key blob of the key asked to sign.
    public var publicKey: Data
    /// The bytes to sign, as the client sent them (a login's user-authentication request,
    /// an `SSHSIG` blob from `ssh-keygen -Y sign`, or anything else).
    public var data: Data
    /// The agent protocol's signature flags.
    public var flags: UInt32
    /// The sessions the connection was bound to, in order (the last is the newest hop).
    public var bindings: [SSHSessionBinding]

    /// A request.
    public init(publicKey: Data, data: Data, flags: UInt32, bindings: [SSHSessionBinding]) {
        self.publicKey = publicKey
        self.data = data
        self.flags = flags
        self.bindings = bindings
    }
}

/// A signature made by a vault key, and what the person was told it was for.
public struct SSHSignatureReport: Codable, Sendable, Equatable {
    /// The signature blob, as the SSH agent protocol carries it.
    public var signature: Data
    /// What was signed, in words (`log in as git to the host with key SHA256:…`).
    public var purpose: String

    /// A report.
    public init(signature: Data, purpose: String) {
        self.signature = signature
        self.purpose = purpose
    }
}

/// A security key asked of the vault by OpenSSH's provider (`ssh-keygen -t ed25519-sk -w …`).
public struct SSHSecurityKeyEnrollRequest: Codable, Sendable, Equatable {
    /// The item's name (ssh-keygen's `-O user=`), or empty for one derived from the key.
    public var item: String
    /// The application the key is for (`ssh:` unless `-O application=` chose another).
    public var application: String
    /// The security-key API's flags asked (`SecurityKeyFlags`: 0x01 a touch per signature,
    /// 0x04 verification required).
    public var flags: UInt8

    /// A request.
    public init(item: String, application: String, flags: UInt8) {
        self.item = item
        self.application = application
        self.flags = flags
    }
}

/// A security key made in the vault: what the provider gives ssh-keygen.
public struct SSHSecurityKeyEnrollment: Codable, Sendable, Equatable {
    /// The key as `ssh list` shows it (type `sk-ssh-ed25519@openssh.com`).
    public var key: SSHKeyReport
    /// The raw 32-byte Ed25519 public key.
    public var rawPublicKey: Data
    /// What names the key in later signatures (kept in ssh-keygen's private key file; not
    /// a secret: it names the item and its public key, and signs nothing by itself).
    public var keyHandle: Data
    /// The flags the key was made with.
    public var flags: UInt8

    /// An enrollment.
    public init(key: SSHKeyReport, rawPublicKey: Data, keyHandle: Data, flags: UInt8) {
        self.key = key
        self.rawPublicKey = rawPublicKey
        self.keyHandle = keyHandle
        self.flags = flags
    }
}

/// A signature asked of a security key by OpenSSH's provider.
public struct SSHSecurityKeySignRequest: Codable, Sendable, Equatable {
    /// The application the key was made for.
    public var application: String
    /// The key handle from the enrollment.
    public var keyHandle: Data
    /// The key's flags as ssh read them from its private key file.
    public var flags: UInt8
    /// The bytes to sign (a login request, an `SSHSIG` blob, …), hashed into the assertion.
    public var data: Data
    /// The sessions the provider's connection to the agent was bound to, in order: ssh binds
    /// a forwarded agent connection to the session it came through (`session-bind@openssh.com`
    /// with its forwarding flag), so a provider that reaches the agent through forwarding is
    /// seen as another host asking, as an ordinary key's signature is.
    public var bindings: [SSHSessionBinding]

    /// A request.
    public init(application: String, keyHandle: Data, flags: UInt8, data: Data, bindings: [SSHSessionBinding] = []) {
        self.application = application
        self.keyHandle = keyHandle
        self.flags = flags
        self.data = data
        self.bindings = bindings
    }

    private enum CodingKeys: String, CodingKey { case application, keyHandle, flags, data, bindings }

    /// Decodes a request; one that names no bindings was made on a connection bound to none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        application = try container.decode(String.self, forKey: .application)
        keyHandle = try container.decode(Data.self, forKey: .keyHandle)
        flags = try container.decode(UInt8.self, forKey: .flags)
        data = try container.decode(Data.self, forKey: .data)
        bindings = try container.decodeIfPresent([SSHSessionBinding].self, forKey: .bindings) ?? []
    }
}

/// A security-key signature: what `sk_sign` returns to OpenSSH.
public struct SSHSecurityKeySignature: Codable, Sendable, Equatable {
    /// The raw 64-byte Ed25519 signature over the assertion.
    public var signature: Data
    /// The flags signed: 0x01 when a touch was made for this signature, 0x04 when an
    /// enrolled finger matched for it.
    public var flags: UInt8
    /// The signature counter, which only grows.
    public var counter: UInt32
    /// What was signed, in words.
    public var purpose: String

    /// A signature.
    public init(signature: Data, flags: UInt8, counter: UInt32, purpose: String) {
        self.signature = signature
        self.flags = flags
        self.counter = counter
        self.purpose = purpose
    }
}
