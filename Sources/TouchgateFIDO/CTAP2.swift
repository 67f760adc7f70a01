/// CTAP 2.1's commands and status codes, and its requests read into typed values: what a
/// door decodes before it asks the service anything. Every field is checked for its type and
/// size here, so nothing past this layer sees raw CBOR.
public enum CTAP2 {
    public enum Command: UInt8, Sendable {
        case makeCredential = 0x01, getAssertion = 0x02, getInfo = 0x04, clientPIN = 0x06, reset = 0x07
        case getNextAssertion = 0x08, credentialManagement = 0x0A, selection = 0x0B
        /// The preview form of credential management (FIDO_2_1_PRE), which Debian's fido2-token sends.
        case credentialManagementPreview = 0x41
    }

    /// CTAP 2.1 §8.2's status codes (those this authenticator answers).
    public enum Status: UInt8, Error, Sendable {
        case ok = 0x00
        case invalidCommand = 0x01
        case invalidParameter = 0x02
        case invalidLength = 0x03
        case cborUnexpectedType = 0x11
        case invalidCBOR = 0x12
        case missingParameter = 0x14
        case limitExceeded = 0x15
        case credentialExcluded = 0x19
        case processing = 0x21
        case invalidCredential = 0x22
        case userActionPending = 0x23
        case operationPending = 0x24
        case noOperations = 0x25
        case unsupportedAlgorithm = 0x26
        case operationDenied = 0x27
        case keyStoreFull = 0x28
        case unsupportedOption = 0x2B
        case invalidOption = 0x2C
        case keepaliveCancel = 0x2D
        case noCredentials = 0x2E
        case userActionTimeout = 0x2F
        case notAllowed = 0x30
        case pinInvalid = 0x31
        case pinBlocked = 0x32
        case pinAuthInvalid = 0x33
        case pinAuthBlocked = 0x34
        case pinNotSet = 0x35
        case puatRequired = 0x36
        case pinPolicyViolation = 0x37
        case requestTooLarge = 0x39
        case actionTimeout = 0x3A
        case upRequired = 0x3B
        case uvBlocked = 0x3C
        case integrityFailure = 0x3D
        case invalidSubcommand = 0x3E
        case uvInvalid = 0x3F
        case unauthorizedPermission = 0x40
        case other = 0x7F
    }

    /// COSE algorithm identifiers offered.
    public enum Algorithm: Int, Sendable, CaseIterable {
        case es256 = -7
        case edDSA = -8
    }

    /// pinUvAuthToken permissions (CTAP 2.1 §6.5.5.7).
    public struct Permissions: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let makeCredential = Permissions(rawValue: 0x01)
        public static let getAssertion = Permissions(rawValue: 0x02)
        public static let credentialManagement = Permissions(rawValue: 0x04)
        public static let bioEnrollment = Permissions(rawValue: 0x08)
        public static let largeBlobWrite = Permissions(rawValue: 0x10)
        public static let authenticatorConfig = Permissions(rawValue: 0x20)
    }

    /// The AAGUID Touchgate's authenticator states in getInfo and in every credential it makes
    /// (a fixed, random value of its own).
    public static let aaguid: [UInt8] = [0x6f, 0x1c, 0x52, 0x3e, 0x0b, 0x8d, 0x4a, 0x27, 0x9e, 0x55, 0x31, 0xc4, 0x7a, 0x02, 0xd9, 0x6b]

    /// Limits this authenticator states in getInfo and enforces.
    public static let maximumCredentialIdLength = 128
    public static let maximumCredentialsInList = 16
    public static let maximumRelyingPartyIdLength = 253
    public static let maximumUserIdLength = 64
    public static let maximumNameLength = 64
}

/// A public-key credential descriptor (`{type, id}`).
public struct CredentialDescriptor: Equatable, Sendable {
    public var id: [UInt8]
    public init(id: [UInt8]) { self.id = id }

    var cbor: CBOR { .map([(.text("type"), .text("public-key")), (.text("id"), .bytes(id))]) }
}

/// The user an account is for (`{id, name, displayName}`).
public struct CredentialUser: Equatable, Sendable {
    public var id: [UInt8]
    public var name: String?
    public var displayName: String?

    public init(id: [UInt8], name: String?, displayName: String?) {
        self.id = id
        self.name = name
        self.displayName = displayName
    }

    var cbor: CBOR {
        var pairs: [(CBOR, CBOR)] = [(.text("id"), .bytes(id))]
        if let name { pairs.append((.text("name"), .text(name))) }
        if let displayName { pairs.append((.text("displayName"), .text(displayName))) }
        return .map(pairs)
    }
}

/// The pinUvAuthParam a request carries, and its protocol.
public struct PinUvAuth: Equatable, Sendable {
    public var parameter: [UInt8]
    public var protocolVersion: Int
}

/// authenticatorMakeCredential's parameters.
public struct MakeCredentialRequest: Equatable, Sendable {
    public var clientDataHash: [UInt8]
    public var rpId: String
    public var rpName: String?
    public var user: CredentialUser
    /// The algorithms the relying party accepts, in its order of preference.
    public var algorithms: [Int]
    public var excludeList: [CredentialDescriptor]
    public var residentKey: Bool
    public var userVerification: Bool
    public var pinUvAuth: PinUvAuth?
    /// Whether the request is a zero-length pinUvAuthParam probe ("is a PIN set?", §6.1.2 step 1).
    public var isAuthProbe: Bool
    /// Whether `up` was sent as false, which makeCredential never allows.
    public var presenceDeclined: Bool

    public init(_ value: CBOR) throws(CTAP2.Status) {
        guard value.mapValue != nil else { throw .cborUnexpectedType }
        clientDataHash = try Self.hash(value[1])
        guard let rp = value[2], rp.mapValue != nil else { throw .missingParameter }
        guard let id = try Self.text(rp["id"], limit: CTAP2.maximumRelyingPartyIdLength) else { throw .missingParameter }
        rpId = id
        rpName = try Self.text(rp["name"], limit: CTAP2.maximumNameLength, truncating: true)
        user = try Self.user(value[3])
        guard let parameters = value[4]?.arrayValue else { throw value[4] == nil ? .missingParameter : .cborUnexpectedType }
        var algorithms: [Int] = []
        for parameter in parameters {
            guard parameter.mapValue != nil, let type = parameter["type"]?.textString, let alg = parameter["alg"]?.int else {
                throw .cborUnexpectedType
            }
            if type == "public-key" { algorithms.append(alg) }
        }
        self.algorithms = algorithms
        excludeList = try Self.descriptors(value[5])
        let options = try Self.options(value[7])
        residentKey = options["rk"] ?? false
        userVerification = options["uv"] ?? false
        presenceDeclined = options["up"] == false
        (pinUvAuth, isAuthProbe) = try Self.pinUvAuth(value[8], value[9])
    }

    /// A PublicKeyCredentialUserEntity: its id, and its names cut to length.
    static func user(_ value: CBOR?) throws(CTAP2.Status) -> CredentialUser {
        guard let value, value.mapValue != nil else { throw value == nil ? .missingParameter : .cborUnexpectedType }
        guard let userId = value["id"]?.byteString else { throw value["id"] == nil ? .missingParameter : .cborUnexpectedType }
        guard userId.count <= CTAP2.maximumUserIdLength else { throw .invalidLength }
        return CredentialUser(id: userId, name: try text(value["name"], limit: CTAP2.maximumNameLength, truncating: true),
                              displayName: try text(value["displayName"], limit: CTAP2.maximumNameLength, truncating: true))
    }

    static func hash(_ value: CBOR?) throws(CTAP2.Status) -> [UInt8] {
        guard let value else { throw .missingParameter }
        guard let bytes = value.byteString else { throw .cborUnexpectedType }
        guard bytes.count == 32 else { throw .invalidLength }
        return bytes
    }

    /// Text of at most `limit` UTF-8 bytes; a longer name is cut at a character boundary
    /// (CTAP 2.1 §6.1.2 lets authenticators truncate names), a longer id refused.
    static func text(_ value: CBOR?, limit: Int, truncating: Bool = false) throws(CTAP2.Status) -> String? {
        guard let value else { return nil }
        guard let text = value.textString else { throw .cborUnexpectedType }
        guard text.utf8.count > limit else { return text }
        guard truncating else { throw .invalidLength }
        var cut = ""
        for character in text {
            guard cut.utf8.count + String(character).utf8.count <= limit else { break }
            cut.append(character)
        }
        return cut
    }

    static func descriptors(_ value: CBOR?) throws(CTAP2.Status) -> [CredentialDescriptor] {
        guard let value else { return [] }
        guard let list = value.arrayValue else { throw .cborUnexpectedType }
        guard list.count <= CTAP2.maximumCredentialsInList else { throw .limitExceeded }
        var descriptors: [CredentialDescriptor] = []
        for item in list {
            guard item.mapValue != nil, let type = item["type"]?.textString, let id = item["id"]?.byteString else {
                throw .cborUnexpectedType
            }
            // Another type, or an id too long to be ours, names nothing here.
            if type == "public-key", id.count <= CTAP2.maximumCredentialIdLength { descriptors.append(CredentialDescriptor(id: id)) }
        }
        return descriptors
    }

    static func options(_ value: CBOR?) throws(CTAP2.Status) -> [String: Bool] {
        guard let value else { return [:] }
        guard let pairs = value.mapValue else { throw .cborUnexpectedType }
        var options: [String: Bool] = [:]
        for (key, flag) in pairs {
            guard let name = key.textString, let on = flag.boolean else { throw .cborUnexpectedType }
            options[name] = on
        }
        return options
    }

    static func pinUvAuth(_ parameter: CBOR?, _ version: CBOR?) throws(CTAP2.Status) -> (PinUvAuth?, Bool) {
        guard let parameter else { return (nil, false) }
        guard let bytes = parameter.byteString else { throw .cborUnexpectedType }
        if bytes.isEmpty { return (nil, true) }
        guard let version else { throw .missingParameter }
        guard let number = version.int else { throw .cborUnexpectedType }
        return (PinUvAuth(parameter: bytes, protocolVersion: number), false)
    }
}

/// authenticatorGetAssertion's parameters.
public struct GetAssertionRequest: Equatable, Sendable {
    public var rpId: String
    public var clientDataHash: [UInt8]
    public var allowList: [CredentialDescriptor]
    public var userPresence: Bool
    public var userVerification: Bool
    public var pinUvAuth: PinUvAuth?
    public var isAuthProbe: Bool

    public init(_ value: CBOR) throws(CTAP2.Status) {
        guard value.mapValue != nil else { throw .cborUnexpectedType }
        guard let id = try MakeCredentialRequest.text(value[1], limit: CTAP2.maximumRelyingPartyIdLength) else {
            throw .missingParameter
        }
        rpId = id
        clientDataHash = try MakeCredentialRequest.hash(value[2])
        allowList = try MakeCredentialRequest.descriptors(value[3])
        let options = try MakeCredentialRequest.options(value[5])
        if options["rk"] != nil { throw .unsupportedOption }
        userPresence = options["up"] ?? true
        userVerification = options["uv"] ?? false
        (pinUvAuth, isAuthProbe) = try MakeCredentialRequest.pinUvAuth(value[6], value[7])
        // An allow list restricts the answer to what it names (CTAP 2.1 §6.2.2): one whose
        // every entry was dropped (another type, an id too long to be ours) names nothing here,
        // and must not read as no list, which would answer with the site's discoverable ones.
        if !isAuthProbe, value[3]?.arrayValue?.isEmpty == false, allowList.isEmpty { throw .noCredentials }
    }
}

/// authenticatorClientPIN's parameters, as far as an authenticator with built-in user
/// verification and no PIN reads them.
public struct ClientPINRequest: Equatable, Sendable {
    public enum Subcommand: Int, Sendable {
        case getPINRetries = 1, getKeyAgreement = 2, setPIN = 3, changePIN = 4, getPinToken = 5
        case getPinUvAuthTokenUsingUvWithPermissions = 6, getUVRetries = 7
        case getPinUvAuthTokenUsingPinWithPermissions = 9
    }

    public var protocolVersion: Int?
    public var subcommand: Subcommand
    /// The platform's key agreement key: its P-256 point's x and y.
    public var platformKey: (x: [UInt8], y: [UInt8])?
    public var permissions: CTAP2.Permissions
    public var rpId: String?

    public static func == (lhs: ClientPINRequest, rhs: ClientPINRequest) -> Bool {
        lhs.protocolVersion == rhs.protocolVersion && lhs.subcommand == rhs.subcommand
            && lhs.platformKey?.x == rhs.platformKey?.x && lhs.platformKey?.y == rhs.platformKey?.y
            && lhs.permissions == rhs.permissions && lhs.rpId == rhs.rpId
    }

    public init(_ value: CBOR) throws(CTAP2.Status) {
        guard value.mapValue != nil else { throw .cborUnexpectedType }
        if let version = value[1] {
            guard let number = version.int else { throw .cborUnexpectedType }
            protocolVersion = number
        }
        guard let number = value[2]?.int else { throw value[2] == nil ? .missingParameter : .cborUnexpectedType }
        guard let subcommand = Subcommand(rawValue: number) else { throw .invalidSubcommand }
        self.subcommand = subcommand
        if let key = value[3] {
            // A COSE_Key: kty EC2 (2), alg −25 (ECDH-ES+HKDF-256), crv P-256 (1), x, y.
            guard key.mapValue != nil, key[1]?.int == 2, key[-1]?.int == 1,
                  let x = key[-2]?.byteString, let y = key[-3]?.byteString, x.count == 32, y.count == 32 else {
                throw .invalidParameter
            }
            platformKey = (x, y)
        }
        if let bits = value[9] {
            guard let number = bits.int, (0...0xFF).contains(number) else { throw .cborUnexpectedType }
            permissions = CTAP2.Permissions(rawValue: UInt8(number))
        } else {
            permissions = []
        }
        rpId = try MakeCredentialRequest.text(value[10], limit: CTAP2.maximumRelyingPartyIdLength)
    }
}

/// authenticatorCredentialManagement's parameters.
public struct CredentialManagementRequest: Equatable, Sendable {
    public enum Subcommand: Int, Sendable {
        case getCredsMetadata = 1, enumerateRPsBegin = 2, enumerateRPsGetNextRP = 3
        case enumerateCredentialsBegin = 4, enumerateCredentialsGetNextCredential = 5
        case deleteCredential = 6, updateUserInformation = 7
    }

    public var subcommand: Subcommand
    /// The subcommand's parameters, as sent (the pinUvAuthParam covers their encoding).
    public var parameters: CBOR?
    public var pinUvAuth: PinUvAuth?

    public init(_ value: CBOR) throws(CTAP2.Status) {
        guard value.mapValue != nil else { throw .cborUnexpectedType }
        guard let number = value[1]?.int else { throw value[1] == nil ? .missingParameter : .cborUnexpectedType }
        guard let subcommand = Subcommand(rawValue: number) else { throw .invalidSubcommand }
        self.subcommand = subcommand
        parameters = value[2]
        if let parameters, parameters.mapValue == nil { throw .cborUnexpectedType }
        (pinUvAuth, _) = try MakeCredentialRequest.pinUvAuth(value[4], value[3])
    }

    /// The rpIDHash of enumerateCredentialsBegin.
    public var rpIdHash: [UInt8]? {
        guard let hash = parameters?[1]?.byteString, hash.count == 32 else { return nil }
        return hash
    }

    /// The credential of deleteCredential or updateUserInformation.
    public var credentialId: [UInt8]? {
        guard let descriptor = parameters?[2], descriptor["type"]?.textString == "public-key",
              let id = descriptor["id"]?.byteString else { return nil }
        return id
    }

    /// The account's new names of updateUserInformation (an empty name removes it, CTAP 2.1 §6.8.6).
    public func user() throws(CTAP2.Status) -> CredentialUser {
        var user = try MakeCredentialRequest.user(parameters?[3])
        if user.name?.isEmpty == true { user.name = nil }
        if user.displayName?.isEmpty == true { user.displayName = nil }
        return user
    }
}
