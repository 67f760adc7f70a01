public import TouchgateAPI
import TouchgateBasics
import TouchgateCrypto
import TouchgateFIDO
import FoundationEssentials

/// The CTAP 2.1 authenticator: one device's state (its key agreement key, the
/// pinUvAuthToken it gave out, assertions waiting for GetNextAssertion), and each command
/// turned into the service's passkey requests. It decides nothing: whether a finger matched,
/// which passkeys exist and what is signed are the service's; here are only CTAP's rules
/// of the conversation (which answer means what to a browser).
public actor PasskeyAuthenticator {
    /// The service, as the door reaches it for the device's caller.
    private let requests: any TouchgateRequests
    private let interaction: PasskeyPrompts
    private let log: @Sendable (String) -> Void
    /// The policy of the passkeys it makes (nil: the service's default), its owner's choice.
    private let policy: String?
    private var protocolTwo = PinUvProtocolTwo()
    private var token: Token?
    private var pendingAssertions: (answers: [CBOR], made: ContinuousClock.Instant)?

    /// A pinUvAuthToken and what it may do: its verification's ticket, used once.
    private struct Token {
        let value: SecretBytes
        let permissions: CTAP2.Permissions
        var rpId: String?
        var ticket: (verified: Verified, ceremony: PasskeyCeremony)?
        let made: ContinuousClock.Instant

        /// The verification's ticket for `ceremony` if it is unused and the service still
        /// takes it (a credential manager left open a minute asks for a touch rather than
        /// fail on a spent one); used up either way. A later ceremony of the token asks for a
        /// new touch (CTAP asks for user presence again, which here is a finger).
        mutating func takeTicket(for ceremony: PasskeyCeremony) -> [UInt8]? {
            defer { ticket = nil }
            guard let unused = ticket, unused.ceremony == ceremony, unused.verified.isFresh else { return nil }
            return unused.verified.ticket
        }
    }

    /// A verification's ticket, and until when the service takes it (as it said).
    private struct Verified {
        let ticket: [UInt8]
        let expires: ContinuousClock.Instant?

        var isFresh: Bool { expires.map { ContinuousClock.now < $0 } ?? true }
    }

    /// How long a token stays usable after its verification (CTAP 2.1's rolling timer's most).
    static let tokenLifetime: Duration = .seconds(600)

    public init(requests: any TouchgateRequests, interaction: PasskeyPrompts, policy: String? = nil,
                log: @escaping @Sendable (String) -> Void) {
        self.requests = requests
        self.policy = policy
        self.interaction = interaction
        self.log = log
    }

    /// Answers one CBOR message: a command byte and its parameters; the status byte and the answer.
    public func perform(_ message: [UInt8]) async -> [UInt8] {
        guard let first = message.first else { return [CTAP2.Status.invalidLength.rawValue] }
        guard let command = CTAP2.Command(rawValue: first) else { return [CTAP2.Status.invalidCommand.rawValue] }
        do {
            let parameters: CBOR? = message.count > 1 ? try Self.decode(Array(message.dropFirst())) : nil
            let answer = try await perform(command, parameters)
            return [CTAP2.Status.ok.rawValue] + (answer?.encoded ?? [])
        } catch {
            if ![.noCredentials, .uvInvalid, .keepaliveCancel, .pinNotSet].contains(error) { log("\(command) refused: \(error)") }
            return [error.rawValue]
        }
    }

    private static func decode(_ bytes: [UInt8]) throws(CTAP2.Status) -> CBOR {
        do {
            return try CBOR.decode(bytes)
        } catch .tooLarge {
            throw .limitExceeded
        } catch {
            throw .invalidCBOR
        }
    }

    private func perform(_ command: CTAP2.Command, _ parameters: CBOR?) async throws(CTAP2.Status) -> CBOR? {
        if command != .getNextAssertion { pendingAssertions = nil }
        if command != .credentialManagement, command != .credentialManagementPreview { enumeration = ([], []) }
        switch command {
        case .getInfo:
            return CTAP2Answer.info(aaguid: CTAP2.aaguid, firmware: 1)
        case .makeCredential:
            return try await makeCredential(MakeCredentialRequest(try Self.required(parameters)))
        case .getAssertion:
            return try await getAssertion(GetAssertionRequest(try Self.required(parameters)))
        case .getNextAssertion:
            guard var pending = pendingAssertions, ContinuousClock.now - pending.made < .seconds(30),
                  !pending.answers.isEmpty else {
                pendingAssertions = nil
                throw .notAllowed
            }
            let next = pending.answers.removeFirst()
            pending.made = .now
            pendingAssertions = pending.answers.isEmpty ? nil : pending
            return next
        case .clientPIN:
            return try await clientPIN(ClientPINRequest(try Self.required(parameters)))
        case .reset:
            // Removing every passkey is `touchgate passkey delete`'s, one by one, confirmed.
            log("refused an authenticator reset: passkeys are removed with touchgate passkey delete")
            throw .notAllowed
        case .selection:
            _ = try await verify(rpId: nil, ceremony: .select)
            return nil
        case .credentialManagement, .credentialManagementPreview:
            return try await manageCredentials(CredentialManagementRequest(try Self.required(parameters)))
        }
    }

    private static func required(_ parameters: CBOR?) throws(CTAP2.Status) -> CBOR {
        guard let parameters else { throw .missingParameter }
        return parameters
    }

    // MARK: Registration and sign-in

    private func makeCredential(_ request: MakeCredentialRequest) async throws(CTAP2.Status) -> CBOR {
        if request.isAuthProbe { return try await authProbe() }
        if request.presenceDeclined { throw .invalidOption }
        guard request.algorithms.contains(where: { CTAP2.Algorithm(rawValue: $0) != nil }) else { throw .unsupportedAlgorithm }
        let ticket = try await ticket(for: request.pinUvAuth, clientDataHash: request.clientDataHash, rpId: request.rpId,
                                      permission: .makeCredential, ceremony: .register)
        let made: PasskeyMade
        do {
            made = try await requests.passkeyMake(PasskeyMakeRequest(
                rpID: request.rpId, rpName: request.rpName, userID: Data(request.user.id), userName: request.user.name,
                displayName: request.user.displayName, algorithms: request.algorithms,
                excludeList: request.excludeList.map { Data($0.id) }, discoverable: request.residentKey,
                clientDataHash: Data(request.clientDataHash), ticket: Data(ticket), policy: policy))
        } catch {
            throw failure(error, ceremony: "registration at \(request.rpId)")
        }
        return CTAP2Answer.madeCredential(authenticatorData: [UInt8](made.authenticatorData),
                                          algorithm: made.passkey.algorithm == "eddsa" ? CTAP2.Algorithm.edDSA.rawValue
                                              : CTAP2.Algorithm.es256.rawValue,
                                          signature: [UInt8](made.attestationSignature))
    }

    private func getAssertion(_ request: GetAssertionRequest) async throws(CTAP2.Status) -> CBOR {
        if request.isAuthProbe { return try await authProbe() }
        // Which credentials are held is answered without a touch, as any authenticator does;
        // a signature is never made without one.
        let held: PasskeyListing
        do {
            held = try await requests.passkeyList(PasskeyListRequest(
                rpID: request.rpId, credentialIDs: request.allowList.isEmpty ? nil : request.allowList.map { Data($0.id) }))
        } catch {
            throw failure(error, ceremony: "sign-in at \(request.rpId)")
        }
        let usable = held.passkeys.filter { $0.usable && (request.allowList.isEmpty ? $0.discoverable : true) }
        guard !usable.isEmpty else { throw .noCredentials }
        let ticket: [UInt8]?
        if request.userPresence {
            ticket = try await self.ticket(for: request.pinUvAuth, clientDataHash: request.clientDataHash, rpId: request.rpId,
                                           permission: .getAssertion, ceremony: .signIn)
        } else {
            // A platform's check of which credential is held (python-fido2 and Chromium send it
            // before a ceremony with an allow or exclude list): no touch, and the assertion
            // says so; the token is left for the ceremony.
            if let auth = request.pinUvAuth { try checkToken(auth, clientDataHash: request.clientDataHash, rpId: request.rpId) }
            ticket = nil
        }
        let signed: PasskeyAssertions
        do {
            signed = try await requests.passkeyAssert(PasskeyAssertRequest(
                rpID: request.rpId, clientDataHash: Data(request.clientDataHash),
                allowList: request.allowList.map { Data($0.id) }, ticket: ticket.map { Data($0) }, presence: request.userPresence))
        } catch {
            throw failure(error, ceremony: "sign-in at \(request.rpId)")
        }
        let answers = signed.assertions.enumerated().map { index, assertion in
            CTAP2Answer.assertion(
                credentialId: [UInt8](assertion.credentialID), authenticatorData: [UInt8](assertion.authenticatorData),
                signature: [UInt8](assertion.signature),
                user: assertion.userID.map { CredentialUser(id: [UInt8]($0), name: assertion.userName,
                                                            displayName: assertion.displayName) },
                count: index == 0 && signed.assertions.count > 1 ? signed.assertions.count : nil)
        }
        guard let first = answers.first else { throw .noCredentials }
        if answers.count > 1 { pendingAssertions = (Array(answers.dropFirst()), .now) }
        return first
    }

    /// A zero-length pinUvAuthParam (CTAP 2.1 §6.1.2 step 1): a platform choosing among
    /// authenticators waits for a touch; none has a PIN here.
    private func authProbe() async throws(CTAP2.Status) -> CBOR {
        _ = try await verify(rpId: nil, ceremony: .select)
        throw .pinNotSet
    }

    /// The ticket a ceremony is asked with: the token's, if the request carries a valid
    /// pinUvAuthParam whose verification is unused; else a verification made now.
    private func ticket(for auth: PinUvAuth?, clientDataHash: [UInt8], rpId: String, permission: CTAP2.Permissions,
                        ceremony: PasskeyCeremony) async throws(CTAP2.Status) -> [UInt8] {
        if let auth {
            try checkToken(auth, clientDataHash: clientDataHash, rpId: rpId)
            guard var token, token.permissions.contains(permission) else { throw .unauthorizedPermission }
            token.rpId = rpId
            let unused = token.takeTicket(for: ceremony)
            self.token = token
            if let unused { return unused }
        }
        return try await verify(rpId: rpId, ceremony: ceremony).ticket
    }

    /// Checks a request's pinUvAuthParam against the token given out, and the site it is for.
    private func checkToken(_ auth: PinUvAuth, clientDataHash: [UInt8], rpId: String) throws(CTAP2.Status) {
        guard auth.protocolVersion == 2 else { throw .invalidParameter }
        guard let token, ContinuousClock.now - token.made < Self.tokenLifetime,
              token.value.withUnsafeBytes({ PinUvProtocolTwo.verify(key: $0, clientDataHash, mac: auth.parameter) }) else {
            throw .pinAuthInvalid
        }
        guard token.rpId == nil || token.rpId == rpId else { throw .unauthorizedPermission }
    }

    /// A user verification by the service: the ticket, or the CTAP status of its failure.
    private func verify(rpId: String?, ceremony: PasskeyCeremony) async throws(CTAP2.Status) -> Verified {
        let verification: PasskeyVerification
        defer { interaction.ended() }
        do {
            verification = try await requests.passkeyVerify(PasskeyVerifyRequest(rpID: rpId, ceremony: ceremony),
                                                            interaction: interaction)
        } catch {
            throw failure(error, ceremony: "user verification\(rpId.map { " for \($0)" } ?? "")")
        }
        guard verification.match, let ticket = verification.ticket else {
            // Chromium and python-fido2 read UV_INVALID as "wrong finger, try again" and
            // UV_BLOCKED as "no more tries"; anything else ends the ceremony.
            throw verification.attemptsLeft == 0 ? .uvBlocked : .uvInvalid
        }
        return Verified(ticket: [UInt8](ticket), expires: verification.ticketSeconds.map { .now + .seconds($0) })
    }

    /// The CTAP status for a service failure; the person is told the service's message (what
    /// to do next: unlock the vault, enroll a finger), which CTAP has no room for.
    private func failure(_ error: ServiceError, ceremony: String) -> CTAP2.Status {
        let status = Self.status(error, ceremony: ceremony)
        if error.code != .cancelled { interaction.refused("\(ceremony): \(error.message)") }
        return status
    }

    /// The CTAP status a browser acts on for a service failure.
    static func status(_ error: ServiceError, ceremony: String) -> CTAP2.Status {
        switch error.code {
        case .cancelled: .keepaliveCancel
        case .noMatch: error.attemptsLeft == 0 ? .uvBlocked : .uvInvalid
        case .lockedOut: .uvBlocked
        case .notFound, .itemInvalidated: .noCredentials
        case .alreadyExists: .credentialExcluded
        case .timedOut: .userActionTimeout
        case .usage: .invalidParameter
        case .quota, .diskFull: .keyStoreFull
        default: .operationDenied
        }
    }

    // MARK: ClientPIN

    private func clientPIN(_ request: ClientPINRequest) async throws(CTAP2.Status) -> CBOR {
        switch request.subcommand {
        case .getKeyAgreement:
            guard request.protocolVersion == 2 else { throw .invalidParameter }
            return CTAP2Answer.keyAgreement(point: protocolTwo.publicPoint)
        case .getUVRetries:
            return CTAP2Answer.uvRetries(await uvRetries())
        case .getPINRetries:
            throw .pinNotSet
        case .getPinUvAuthTokenUsingUvWithPermissions:
            guard request.protocolVersion == 2 else { throw .invalidParameter }
            guard let platform = request.platformKey, !request.permissions.isEmpty else { throw .missingParameter }
            let supported: CTAP2.Permissions = [.makeCredential, .getAssertion, .credentialManagement]
            guard supported.isSuperset(of: request.permissions) else { throw .unauthorizedPermission }
            if !request.permissions.isDisjoint(with: [.makeCredential, .getAssertion]), request.rpId == nil {
                throw .missingParameter
            }
            guard let shared = protocolTwo.sharedSecret(x: platform.x, y: platform.y) else { throw .invalidParameter }
            let ceremony: PasskeyCeremony = request.permissions.contains(.makeCredential) ? .register
                : request.permissions.contains(.getAssertion) ? .signIn : .manage
            token = nil
            let ticket = try await verify(rpId: ceremony == .manage ? nil : request.rpId, ceremony: ceremony)
            let value = SecretBytes.make(count: 32) { out in
                var random = SystemRandomNumberGenerator()
                for index in out.indices { out[index] = random.next() }
            }
            var iv = [UInt8](repeating: 0, count: 16)
            var random = SystemRandomNumberGenerator()
            for index in iv.indices { iv[index] = random.next() }
            guard let sealed = PinUvProtocolTwo.encrypt(value, sharedSecret: shared, iv: iv) else { throw .other }
            token = Token(value: value, permissions: request.permissions, rpId: request.rpId, ticket: (ticket, ceremony),
                          made: .now)
            return CTAP2Answer.token(sealed)
        case .setPIN, .changePIN, .getPinToken, .getPinUvAuthTokenUsingPinWithPermissions:
            // Verification is the finger; there is no PIN to set or use.
            throw .pinPolicyViolation
        }
    }

    /// Failed touches left before the lockout, as the service's status says.
    ///
    /// Without a vault's lockout state (no vault yet, a trail to repair) the answer is the
    /// product's default threshold, not 0: a browser reads 0 as "this key is locked by
    /// wrong fingers" and stops there, while the verification it asks for next is refused
    /// with what to do ("run touchgate init"), which reaches the person's prompts.
    private func uvRetries() async -> Int {
        guard let lockout = try? await requests.status().lockout else { return Self.retriesWithoutLockoutState }
        return lockout.lockedOut ? 0 : max(0, lockout.threshold - lockout.consecutiveFailures)
    }

    /// The policy core's default lockout threshold (PolicyConfiguration.standard).
    static let retriesWithoutLockoutState = 3

    // MARK: Credential management

    /// The discoverable passkeys credential management shows.
    private func discoverablePasskeys() async throws(CTAP2.Status) -> [PasskeyReport] {
        do {
            return try await requests.passkeyList(PasskeyListRequest()).passkeys.filter { $0.usable && $0.discoverable }
        } catch {
            throw failure(error, ceremony: "credential management")
        }
    }

    private var enumeration: (parties: [CBOR], credentials: [CBOR])  = ([], [])

    private func manageCredentials(_ request: CredentialManagementRequest) async throws(CTAP2.Status) -> CBOR? {
        let subcommand = request.subcommand
        // What is left of a listing is for its next subcommand only.
        if subcommand != .enumerateRPsGetNextRP { enumeration.parties = [] }
        if subcommand != .enumerateCredentialsGetNextCredential { enumeration.credentials = [] }
        if ![.enumerateRPsGetNextRP, .enumerateCredentialsGetNextCredential].contains(subcommand) {
            guard let auth = request.pinUvAuth else { throw .puatRequired }
            guard auth.protocolVersion == 2, let token, ContinuousClock.now - token.made < Self.tokenLifetime else {
                throw .pinAuthInvalid
            }
            let message = [UInt8(subcommand.rawValue)] + (request.parameters?.encoded ?? [])
            guard token.value.withUnsafeBytes({ PinUvProtocolTwo.verify(key: $0, message, mac: auth.parameter) }) else {
                throw .pinAuthInvalid
            }
            guard token.permissions.contains(.credentialManagement) else { throw .unauthorizedPermission }
        }
        switch subcommand {
        case .getCredsMetadata:
            let count = try await discoverablePasskeys().count
            return CTAP2Answer.credentialsMetadata(existing: count, remaining: max(0, 1_000 - count))
        case .enumerateRPsBegin:
            let passkeys = try await discoverablePasskeys()
            var sites: [String] = []
            for passkey in passkeys where !sites.contains(passkey.rpID) { sites.append(passkey.rpID) }
            guard !sites.isEmpty else { throw .noCredentials }
            let parties = sites.enumerated().map { index, site in
                CTAP2Answer.relyingParty(id: site, idHash: SHA256.digest(Array(site.utf8)), total: index == 0 ? sites.count : nil)
            }
            enumeration.parties = Array(parties.dropFirst())
            return parties[0]
        case .enumerateRPsGetNextRP:
            guard !enumeration.parties.isEmpty else { throw .notAllowed }
            return enumeration.parties.removeFirst()
        case .enumerateCredentialsBegin:
            guard let hash = request.rpIdHash else { throw .missingParameter }
            let passkeys = try await discoverablePasskeys().filter { SHA256.digest(Array($0.rpID.utf8)) == hash }
            guard !passkeys.isEmpty else { throw .noCredentials }
            let answers = passkeys.enumerated().map { index, passkey in
                CTAP2Answer.credential(user: CredentialUser(id: [UInt8](passkey.userID), name: passkey.userName,
                                                            displayName: passkey.displayName),
                                       credentialId: [UInt8](passkey.credentialID), publicKey: [UInt8](passkey.publicKey),
                                       total: index == 0 ? passkeys.count : nil)
            }
            enumeration.credentials = Array(answers.dropFirst())
            return answers[0]
        case .enumerateCredentialsGetNextCredential:
            guard !enumeration.credentials.isEmpty else { throw .notAllowed }
            return enumeration.credentials.removeFirst()
        case .deleteCredential:
            guard let id = request.credentialId else { throw .missingParameter }
            let ticket = try await manageTicket()
            do {
                _ = try await requests.passkeyDelete(PasskeyDeleteRequest(credentialID: Data(id), ticket: Data(ticket)),
                                                     interaction: interaction)
            } catch {
                throw failure(error, ceremony: "credential removal")
            }
            return nil
        case .updateUserInformation:
            guard let id = request.credentialId else { throw .missingParameter }
            let user = try request.user()
            // Refused before a touch is asked for: a credential not held, another account's id
            // (CTAP 2.1 §6.8.6). The service checks the id again.
            guard let held = try await discoverablePasskeys().first(where: { [UInt8]($0.credentialID) == id }) else {
                throw .noCredentials
            }
            guard [UInt8](held.userID) == user.id else { throw .invalidParameter }
            let ticket = try await manageTicket()
            do {
                _ = try await requests.passkeyUpdate(PasskeyUpdateRequest(
                    credentialID: Data(id), userID: Data(user.id), userName: user.name, displayName: user.displayName,
                    ticket: Data(ticket)))
            } catch {
                // Another account's id (`usage`) is INVALID_PARAMETER, as CTAP 2.1 §6.8.6 names it.
                throw failure(error, ceremony: "credential renaming")
            }
            return nil
        }
    }

    /// A change (removal, renaming) takes the token's verification, or a new one.
    private func manageTicket() async throws(CTAP2.Status) -> [UInt8] {
        if let unused = token?.takeTicket(for: .manage) { return unused }
        return try await verify(rpId: nil, ceremony: .manage).ticket
    }
}
