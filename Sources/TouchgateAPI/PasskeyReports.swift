public import FoundationEssentials

/// Passkeys: FIDO2 credentials in the vault, used through the authenticator door (CTAP 2.1
/// over CTAPHID) and listed or removed with `touchgate passkey`. A door asks for a user
/// verification first (``PasskeyVerifyRequest``, one touch of an enrolled finger for one
/// relying party), and hands the ticket it gets to the one ceremony it is for: the service
/// keeps the ticket, so a door cannot make one up, reuse one, or move one to another site.

/// What a ceremony is for.
public enum PasskeyCeremony: String, Codable, Sendable, Equatable, CaseIterable {
    /// A new credential (WebAuthn registration).
    case register
    /// An assertion (WebAuthn sign-in).
    case signIn = "sign-in"
    /// Listing or removing credentials through the authenticator (credential management).
    case manage
    /// A touch that only picks this authenticator among several (no site is asked for).
    case select
}

/// Asks for one user verification: a touch of an enrolled finger, for one ceremony at one site.
public struct PasskeyVerifyRequest: Codable, Sendable, Equatable {
    /// The relying party (`example.org`); nil only for ``PasskeyCeremony/manage`` and ``PasskeyCeremony/select``.
    public var rpID: String?
    /// A ``PasskeyCeremony``'s name (read by ``kind``: a name not known is a usage error, not a
    /// request that cannot be read).
    public var ceremony: String

    public init(rpID: String?, ceremony: PasskeyCeremony) {
        self.rpID = rpID
        self.ceremony = ceremony.rawValue
    }

    /// The ceremony named.
    public var kind: PasskeyCeremony {
        get throws(ServiceError) {
            guard let kind = PasskeyCeremony(rawValue: ceremony) else {
                throw Operations.unknown(ceremony, "passkey ceremony", PasskeyCeremony.self)
            }
            return kind
        }
    }
}

/// A user verification's outcome.
public struct PasskeyVerification: Codable, Sendable, Equatable {
    /// Whether an enrolled finger matched.
    public var match: Bool
    /// For a match: the ticket the ceremony is asked with (single use, for this user, site
    /// and ceremony, for a short while).
    public var ticket: Data?
    /// After a no-match: failed touches left before a lockout starts.
    public var attemptsLeft: Int?
    /// For a match: how many seconds the service takes the ticket; a door holding it longer
    /// asks for a new verification rather than present a spent one.
    public var ticketSeconds: Int?

    public init(match: Bool, ticket: Data?, attemptsLeft: Int?, ticketSeconds: Int? = nil) {
        self.match = match
        self.ticket = ticket
        self.attemptsLeft = attemptsLeft
        self.ticketSeconds = ticketSeconds
    }
}

/// authenticatorMakeCredential, as the service takes it.
public struct PasskeyMakeRequest: Codable, Sendable, Equatable {
    public var rpID: String
    public var rpName: String?
    public var userID: Data
    public var userName: String?
    public var displayName: String?
    /// COSE algorithm identifiers in the relying party's order of preference.
    public var algorithms: [Int]
    /// Credentials the account already has: none of them may be in this vault.
    public var excludeList: [Data]
    /// A discoverable (resident) credential.
    public var discoverable: Bool
    public var clientDataHash: Data
    /// The ticket of a ``PasskeyVerifyRequest`` for ``PasskeyCeremony/register`` at `rpID`.
    public var ticket: Data
    /// The passkey's access policy: `biometry-any` (the default: any enrolled finger) or
    /// `biometry-current-set` (the fingers enrolled now: an enrollment change invalidates it,
    /// as Apple's keychain does). Its owner's choice, given to the authenticator they run.
    public var policy: String?

    public init(rpID: String, rpName: String?, userID: Data, userName: String?, displayName: String?, algorithms: [Int],
                excludeList: [Data], discoverable: Bool, clientDataHash: Data, ticket: Data, policy: String? = nil) {
        self.policy = policy
        self.rpID = rpID
        self.rpName = rpName
        self.userID = userID
        self.userName = userName
        self.displayName = displayName
        self.algorithms = algorithms
        self.excludeList = excludeList
        self.discoverable = discoverable
        self.clientDataHash = clientDataHash
        self.ticket = ticket
    }
}

/// A new credential: its id, the authenticator data with its public key, and its self attestation.
public struct PasskeyMade: Codable, Sendable, Equatable {
    public var credentialID: Data
    public var authenticatorData: Data
    /// Self attestation (WebAuthn §8.2, `packed` without a certificate): the new key's own
    /// signature over the authenticator data and the client data hash, which says nothing
    /// of the maker but that it holds the key (libfido2's `fido2-cred` requires a signature).
    public var attestationSignature: Data
    public var passkey: PasskeyReport

    public init(credentialID: Data, authenticatorData: Data, attestationSignature: Data, passkey: PasskeyReport) {
        self.credentialID = credentialID
        self.authenticatorData = authenticatorData
        self.attestationSignature = attestationSignature
        self.passkey = passkey
    }
}

/// authenticatorGetAssertion, as the service takes it.
public struct PasskeyAssertRequest: Codable, Sendable, Equatable {
    public var rpID: String
    public var clientDataHash: Data
    /// The credentials the relying party accepts; empty: any discoverable one of `rpID`.
    public var allowList: [Data]
    /// The ticket of a ``PasskeyVerifyRequest`` for ``PasskeyCeremony/signIn`` at `rpID`;
    /// nil for a check without presence.
    public var ticket: Data?
    /// False for a platform's silent check of which credential is held (CTAP's `up: false`):
    /// signed with neither the presence nor the verification flag, which no relying party
    /// accepts as a sign-in (WebAuthn §7.2), and recorded as such.
    public var presence: Bool

    public init(rpID: String, clientDataHash: Data, allowList: [Data], ticket: Data?, presence: Bool = true) {
        self.rpID = rpID
        self.clientDataHash = clientDataHash
        self.allowList = allowList
        self.ticket = ticket
        self.presence = presence
    }
}

/// One signed assertion.
public struct PasskeyAssertion: Codable, Sendable, Equatable {
    public var credentialID: Data
    public var authenticatorData: Data
    public var signature: Data
    /// The account, for a discoverable credential (the user id; its names too when several answer).
    public var userID: Data?
    public var userName: String?
    public var displayName: String?

    public init(credentialID: Data, authenticatorData: Data, signature: Data, userID: Data?, userName: String?,
                displayName: String?) {
        self.credentialID = credentialID
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userID = userID
        self.userName = userName
        self.displayName = displayName
    }
}

/// The assertions of one ceremony: every matching credential's, most recently made first.
public struct PasskeyAssertions: Codable, Sendable, Equatable {
    public var assertions: [PasskeyAssertion]
    public init(assertions: [PasskeyAssertion]) { self.assertions = assertions }
}

/// Which passkeys a listing shows.
public struct PasskeyListRequest: Codable, Sendable, Equatable {
    /// Only this relying party's.
    public var rpID: String?
    /// Only these credentials.
    public var credentialIDs: [Data]?

    public init(rpID: String? = nil, credentialIDs: [Data]? = nil) {
        self.rpID = rpID
        self.credentialIDs = credentialIDs
    }
}

/// A passkey, never its private key.
public struct PasskeyReport: Codable, Sendable, Equatable {
    /// The vault item that holds it.
    public var name: String
    public var rpID: String
    public var rpName: String?
    public var userID: Data
    public var userName: String?
    public var displayName: String?
    public var credentialID: Data
    /// `es256` or `eddsa`.
    public var algorithm: String
    /// The COSE_Key of its public key.
    public var publicKey: Data
    public var discoverable: Bool
    public var policy: String
    /// False when an enrollment change invalidated it (a `biometry-current-set` passkey).
    public var usable: Bool

    public init(name: String, rpID: String, rpName: String?, userID: Data, userName: String?, displayName: String?,
                credentialID: Data, algorithm: String, publicKey: Data, discoverable: Bool, policy: String, usable: Bool) {
        self.name = name
        self.rpID = rpID
        self.rpName = rpName
        self.userID = userID
        self.userName = userName
        self.displayName = displayName
        self.credentialID = credentialID
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.discoverable = discoverable
        self.policy = policy
        self.usable = usable
    }
}

/// The passkeys of a listing.
public struct PasskeyListing: Codable, Sendable, Equatable {
    public var passkeys: [PasskeyReport]
    public init(passkeys: [PasskeyReport]) { self.passkeys = passkeys }
}

/// Removes one passkey, named by its item name or its credential id.
/// New names for a passkey's account (CTAP's updateUserInformation): the site renamed the
/// account. Only through the authenticator, with a verification's ticket.
public struct PasskeyUpdateRequest: Codable, Sendable, Equatable {
    public var credentialID: Data
    /// The account's user id, which must be the passkey's.
    public var userID: Data
    /// The new names; nil removes one.
    public var userName: String?
    public var displayName: String?
    /// The ticket of a verification for ``PasskeyCeremony/manage``.
    public var ticket: Data

    public init(credentialID: Data, userID: Data, userName: String?, displayName: String?, ticket: Data) {
        self.credentialID = credentialID
        self.userID = userID
        self.userName = userName
        self.displayName = displayName
        self.ticket = ticket
    }
}

public struct PasskeyDeleteRequest: Codable, Sendable, Equatable {
    public var name: String?
    public var credentialID: Data?
    /// Through the authenticator: the ticket of a verification for ``PasskeyCeremony/manage``.
    public var ticket: Data?

    public init(name: String? = nil, credentialID: Data? = nil, ticket: Data? = nil) {
        self.name = name
        self.credentialID = credentialID
        self.ticket = ticket
    }
}
