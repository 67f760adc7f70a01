import FoundationEssentials
import TouchgateCrypto
import TouchgateFIDO
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

/// Passkeys: the vault as a FIDO2 authenticator. A ceremony runs in two requests: a user
/// verification (a touch of an enrolled finger for one site and one kind of ceremony, with
/// lockout, recorded) that gives a single-use ticket, then the ceremony with that ticket.
/// Every passkey is an item of the vault (kind `passkey`), under a policy like any other;
/// its private key never leaves the service, and signing needs no TPM operation.
extension TouchgateService {
    /// The most assertions one sign-in answers (the discoverable accounts of one site).
    static let maximumAssertions = 16

    public func passkeyVerify(_ request: PasskeyVerifyRequest,
                              interaction: any Interaction) async throws(ServiceError) -> PasskeyVerification {
        let action: String
        let ceremony = try request.kind
        switch (ceremony, request.rpID) {
        case (.register, let rp?): action = "make a passkey for \(StoredText.escaped(rp))"
        case (.signIn, let rp?): action = "sign in to \(StoredText.escaped(rp)) with a passkey"
        case (.manage, _): action = "manage the passkeys"
        case (.select, _): action = "choose Touchgate's passkey authenticator"
        default: throw ServiceError.usage("a passkey \(ceremony.rawValue) names the site (rp-id)")
        }
        if let rp = request.rpID { try Self.checkSite(rp) }
        try await refuseWithoutStore(device: nil)
        return try await withExistingStore(orElse: noVault) { store in
            // The vault must be open before the finger is asked for: a touch that could only
            // end in "locked" would be wasted.
            let context = try store.vault()
            try context.requireIntactState()
            _ = try context.requireKey()
            // Its ticket lets the vault sign with a passkey: the passphrase must be fresh, as
            // for any fingerprint-only use of key material.
            let report = try await match(store, ReaderSensor.Candidates(user: principal.loginName, finger: nil),
                                         operation: "verify", action: action, device: nil, guardsKeyMaterial: true,
                                         interaction: interaction)
            guard report.match else { return PasskeyVerification(match: false, ticket: nil, attemptsLeft: report.attemptsLeft) }
            let ticket = PasskeyTickets.shared.issue(uid: principal.uid, rpId: request.rpID, ceremony: ceremony)
            return PasskeyVerification(match: true, ticket: Data(ticket), attemptsLeft: nil,
                                       ticketSeconds: Int(PasskeyTickets.lifetime.components.seconds))
        }
    }

    public func passkeyMake(_ request: PasskeyMakeRequest) async throws(ServiceError) -> PasskeyMade {
        try Self.checkSite(request.rpID)
        guard let algorithm = request.algorithms.lazy.compactMap(CTAP2.Algorithm.init(rawValue:)).first else {
            throw ServiceError.usage("the site accepts none of the passkey algorithms offered here (ES256, EdDSA)")
        }
        guard request.clientDataHash.count == 32, request.userID.count <= CTAP2.maximumUserIdLength else {
            throw ServiceError.usage("a passkey request names a 32-byte client data hash and a user id of at most "
                                     + "\(CTAP2.maximumUserIdLength) bytes")
        }
        return try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            let site = StoredText.escaped(request.rpID)
            try redeem([UInt8](request.ticket), rpId: request.rpID, ceremony: .register, context: context)
            let held = try Self.passkeys(in: context, key: key)
            for excluded in request.excludeList {
                if held.contains(where: { $0.credentialId == [UInt8](excluded) && $0.passkey?.rpId == request.rpID }) {
                    try context.record(.itemWrite, .denied, reason: "passkey for \(site) not made: the account has one here")
                    throw ServiceError(.alreadyExists, "this vault already holds a passkey of that account at \(site); "
                                       + "nothing was made")
                }
            }
            // A discoverable passkey replaces the one the same account had at the site (CTAP 2.1 §6.1.2).
            let replaced = request.discoverable ? held.filter {
                $0.passkey?.discoverable == true && $0.passkey?.rpId == request.rpID && $0.passkey?.userId == [UInt8](request.userID)
            } : []
            var random = [UInt8](repeating: 0, count: StoredPasskey.credentialIdBytes - 1)
            SecretBytes.random(count: random.count).withUnsafeBytes { random = Array($0) }
            let credentialId = [StoredPasskey.version] + random
            guard let name = StoredPasskey.itemName(credentialId: credentialId) else {
                throw ServiceError(.error, "could not name a new passkey")
            }
            let passkey = StoredPasskey(algorithm: algorithm, secret: StoredPasskey.generate(algorithm), rpId: request.rpID,
                                        rpName: request.rpName, userId: [UInt8](request.userID), userName: request.userName,
                                        displayName: request.displayName, discoverable: request.discoverable)
            // The authenticator's choice (serve --policy), else the person's (policy set
            // --passkey-policy), else any enrolled finger.
            let policy = try Self.passkeyPolicy(request.policy ?? context.settings.passkeyPolicy)
            let digest = try await enrollmentBinding(of: policy, "the passkey", context: context, device: nil)
            let publicKey = try passkey.publicKey
            try atomicallyWithinQuota(context, item: name) { transaction in
                for old in replaced {
                    _ = try transaction.deleteItem(named: old.info.name, in: context.vault)
                    try transaction.append(.itemDelete, .success, vaultUser: context.vault.owner, item: old.info.name,
                                           reason: "passkey replaced by a new one of the same account at \(site)")
                }
                try transaction.setItem(named: name, value: passkey.value, kind: .passkey, policy: policy.description,
                                        freshTouch: true, enrollmentDigest: digest, key: key, expecting: .absent, in: context.vault)
                try transaction.append(.itemWrite, .success, vaultUser: context.vault.owner, item: name,
                                       reason: "passkey made for \(site)\(Self.account(passkey)) (\(passkey.algorithmName), "
                                           + "\(request.discoverable ? "discoverable" : "server-side"), \(policy), fresh touch)")
            }
            let data = AuthenticatorData(rpIdHash: SHA256.digest(Array(request.rpID.utf8)), flags: [.userPresent, .userVerified],
                                         signCount: 0, attested: (CTAP2.aaguid, credentialId, publicKey))
            let info = try Self.item(name, in: context.vault)
            let attestation = try passkey.sign(data.bytes + [UInt8](request.clientDataHash))
            return PasskeyMade(credentialID: Data(credentialId), authenticatorData: Data(data.bytes),
                               attestationSignature: Data(attestation), passkey: try passkey.report(name: name, info: info))
        }
    }

    public func passkeyAssert(_ request: PasskeyAssertRequest) async throws(ServiceError) -> PasskeyAssertions {
        try Self.checkSite(request.rpID)
        guard request.clientDataHash.count == 32 else { throw ServiceError.usage("a passkey sign-in names a 32-byte client data hash") }
        return try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            let site = StoredText.escaped(request.rpID)
            if request.presence {
                try redeem(request.ticket.map { [UInt8]($0) } ?? [], rpId: request.rpID, ceremony: .signIn, context: context)
            }
            let allowed = request.allowList.map { [UInt8]($0) }
            let candidates = try Self.passkeys(in: context, key: key).filter { held in
                allowed.isEmpty ? held.passkey?.discoverable == true && held.passkey?.rpId == request.rpID
                    : allowed.contains(held.credentialId) && (held.passkey == nil || held.passkey?.rpId == request.rpID)
            }
            let usable = candidates.filter { !$0.info.isInvalidated && $0.passkey != nil }
            guard !usable.isEmpty else {
                let invalidated = candidates.first { $0.info.isInvalidated }
                try context.record(.itemRead, .denied, item: invalidated?.info.name,
                                   reason: "passkey sign-in at \(site): "
                                       + (invalidated != nil ? "its passkey was invalidated by an enrollment change" : "no passkey held"))
                if let invalidated {
                    throw ServiceError(.itemInvalidated, "the passkey for \(site) was bound to the fingers enrolled when it "
                                       + "was made, and they changed; make a new one on the site "
                                       + "(touchgate passkey delete \(invalidated.info.name) removes the old one)")
                }
                throw ServiceError(.notFound, "no passkey for \(site) is held here; touchgate passkey list shows those that are")
            }
            // With an allow list, one assertion (CTAP 2.1 §6.2.2); without, each account, newest first.
            let chosen = allowed.isEmpty ? Array(usable.sorted { $0.info.createdAt > $1.info.createdAt }.prefix(Self.maximumAssertions))
                : [usable[0]]
            let data = AuthenticatorData(rpIdHash: SHA256.digest(Array(request.rpID.utf8)),
                                         flags: request.presence ? [.userPresent, .userVerified] : [], signCount: 0).bytes
            var assertions: [PasskeyAssertion] = []
            for held in chosen {
                guard let passkey = held.passkey else { continue }
                let signature = try passkey.sign(data + [UInt8](request.clientDataHash))
                try context.record(.itemRead, .success, item: held.info.name,
                                   reason: request.presence ? "passkey sign-in at \(site)\(Self.account(passkey)) (user verified)"
                                       : "passkey checked by a platform at \(site)\(Self.account(passkey)) (no touch: signed "
                                       + "without presence, which no site accepts as a sign-in)")
                // The account is named for a discoverable credential: its id, and its names when
                // several answer after a touch (never without one: CTAP 2.1 §6.2.2).
                let names = chosen.count > 1 && request.presence
                assertions.append(PasskeyAssertion(credentialID: Data(held.credentialId), authenticatorData: Data(data),
                                                   signature: Data(signature),
                                                   userID: passkey.discoverable ? Data(passkey.userId) : nil,
                                                   userName: passkey.discoverable && names ? passkey.userName : nil,
                                                   displayName: passkey.discoverable && names ? passkey.displayName : nil))
            }
            return PasskeyAssertions(assertions: assertions)
        }
    }

    public func passkeyList(_ request: PasskeyListRequest) async throws(ServiceError) -> PasskeyListing {
        try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            guard try context.vault.items().contains(where: { $0.kind == .passkey }) else { return PasskeyListing(passkeys: []) }
            let key = try context.requireKey()
            let wanted = request.credentialIDs.map { $0.map { [UInt8]($0) } }
            let reports = try Self.passkeys(in: context, key: key).compactMap { held -> PasskeyReport? in
                if let wanted, !wanted.contains(held.credentialId) { return nil }
                if let rp = request.rpID, held.passkey?.rpId != rp { return nil }
                return try held.report
            }
            return PasskeyListing(passkeys: reports)
        }
    }

    public func passkeyDelete(_ request: PasskeyDeleteRequest,
                              interaction: any Interaction) async throws(ServiceError) -> PasskeyReport {
        try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            let held = try Self.passkeys(in: context, key: key)
            guard let found = held.first(where: { entry in
                request.credentialID.map { [UInt8]($0) == entry.credentialId } ?? (request.name == entry.info.name)
            }) else {
                throw ServiceError(.notFound, "no such passkey is held here; touchgate passkey list shows those that are")
            }
            let report = try found.report
            let shown = StoredText.escaped(found.info.name)
            if let ticket = request.ticket {
                try redeem([UInt8](ticket), rpId: nil, ceremony: .manage, context: context)
            } else {
                guard try await interaction.confirm("Delete the passkey for \(StoredText.escaped(report.rpID))"
                                                    + "\(report.userName.map { " (\(StoredText.escaped($0)))" } ?? "")? "
                                                    + "You will no longer sign in with it.", details: []) else {
                    throw ServiceError(.declined, "not confirmed, so '\(shown)' was not deleted (\(Self.withoutTerminal))")
                }
            }
            try context.audit.atomically { transaction in
                _ = try transaction.deleteItem(named: found.info.name, in: context.vault)
                try transaction.append(.itemDelete, .success, vaultUser: context.vault.owner, item: found.info.name,
                                       reason: "passkey for \(StoredText.escaped(report.rpID)) deleted")
            }
            return report
        }
    }

    public func passkeyUpdate(_ request: PasskeyUpdateRequest) async throws(ServiceError) -> PasskeyReport {
        try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            guard let found = try Self.passkeys(in: context, key: key).first(where: { $0.credentialId == [UInt8](request.credentialID) }),
                  let passkey = found.passkey else {
                throw ServiceError(.notFound, "no such passkey is held here; touchgate passkey list shows those that are")
            }
            // CTAP 2.1 §6.8.6: the names of that account only, never another's.
            guard passkey.userId == [UInt8](request.userID) else {
                throw ServiceError.usage("the account named is not the passkey's; nothing was changed")
            }
            try redeem([UInt8](request.ticket), rpId: nil, ceremony: .manage, context: context)
            let renamed = StoredPasskey(algorithm: passkey.algorithm, secret: passkey.secret, rpId: passkey.rpId,
                                        rpName: passkey.rpName, userId: passkey.userId, userName: request.userName,
                                        displayName: request.displayName, discoverable: passkey.discoverable)
            let info = found.info
            try atomicallyWithinQuota(context, item: info.name) { transaction in
                try transaction.setItem(named: info.name, value: renamed.value, kind: .passkey, policy: info.policy,
                                        freshTouch: info.freshTouch, enrollmentDigest: info.enrollmentDigest, key: key,
                                        expecting: .version(info.version), in: context.vault)
                try transaction.append(.itemWrite, .success, vaultUser: context.vault.owner, item: info.name,
                                       reason: "passkey for \(StoredText.escaped(passkey.rpId))\(Self.account(passkey)) renamed to "
                                           + (renamed.userName.map { StoredText.escaped($0) } ?? "no name"))
            }
            return try renamed.report(name: info.name, info: try Self.item(info.name, in: context.vault))
        }
    }

    // MARK: Helpers

    /// A passkey item with what its sealed value says (nil when an enrollment change destroyed its key).
    struct HeldPasskey {
        let info: VaultItemInfo
        let passkey: StoredPasskey?
        var credentialId: [UInt8] { StoredPasskey.credentialId(itemName: info.name) ?? [] }

        var report: PasskeyReport {
            get throws(ServiceError) {
                if let passkey { return try passkey.report(name: info.name, info: info) }
                return PasskeyReport(name: info.name, rpID: "(unreadable: invalidated)", rpName: nil, userID: Data(),
                                     userName: nil, displayName: nil, credentialID: Data(credentialId), algorithm: "",
                                     publicKey: Data(), discoverable: false, policy: info.policy, usable: false)
            }
        }
    }

    /// Every passkey of the vault.
    static func passkeys(in context: VaultContext, key: VaultKey) throws -> [HeldPasskey] {
        try context.vault.items().filter { $0.kind == .passkey }.map { info in
            guard !info.isInvalidated else { return HeldPasskey(info: info, passkey: nil) }
            return HeldPasskey(info: info, passkey: try StoredPasskey(info, context.vault.item(named: info.name, key: key).value))
        }
    }

    /// Uses up a ticket, or records and refuses the ceremony.
    func redeem(_ ticket: [UInt8], rpId: String?, ceremony: PasskeyCeremony, context: VaultContext) throws {
        guard PasskeyTickets.shared.redeem(ticket, uid: principal.uid, rpId: rpId, ceremony: ceremony) else {
            let site = rpId.map { " at \(StoredText.escaped($0))" } ?? ""
            try context.record(.itemRead, .denied, reason: "passkey \(ceremony.rawValue)\(site) refused: no user "
                               + "verification was made for it (a ticket unknown, used, expired, or for another site)")
            throw ServiceError(.forbidden, "no user verification was made for this passkey \(ceremony.rawValue)\(site) (or it "
                               + "was used or ran out); nothing was signed. Touch the reader when asked, then try again")
        }
    }

    /// A passkey's policy: a finger is its verification, so any enrolled one (the default) or
    /// the set enrolled now.
    static func passkeyPolicy(_ text: String?) throws(ServiceError) -> AccessPolicy {
        let text = text ?? "biometry-any"
        guard ["biometry-any", "biometry-current-set"].contains(text), let policy = try? AccessPolicy(parsing: text) else {
            throw ServiceError.usage("a passkey's policy is biometry-any or biometry-current-set (its verification is a "
                                     + "finger), not '\(StoredText.escaped(text))'")
        }
        return policy
    }

    /// A relying-party id is a host name: printable, no spaces, at most 253 bytes.
    static func checkSite(_ rpId: String) throws(ServiceError) {
        guard !rpId.isEmpty, rpId.utf8.count <= CTAP2.maximumRelyingPartyIdLength,
              rpId.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !$0.properties.isWhitespace }) else {
            throw ServiceError.usage("a passkey's site (relying party id) is a host name of 1 to "
                                     + "\(CTAP2.maximumRelyingPartyIdLength) bytes")
        }
    }

    /// ` as alice` for the trail, the account's name escaped.
    static func account(_ passkey: StoredPasskey) -> String {
        passkey.userName.map { " as \(StoredText.escaped($0))" } ?? ""
    }
}
