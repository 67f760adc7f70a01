public import FoundationEssentials
import TouchgatePolicy
import TouchgateSSH
import TouchgateCrypto
import TouchgateVault
public import TouchgateAPI

/// SSH keys in the vault: made here, kept sealed as ``ItemKind/sshKey`` items, and used
/// only to sign, each signature a decision of the key's policy that says what is signed
/// and for whom.
extension TouchgateService {
    /// The most data a signature is asked for: a login's request or an `SSHSIG` blob is a
    /// few hundred bytes; anything larger is not what this agent signs.
    static let maximumSignedBytes = 16 * 1024

    public func sshKeygen(_ name: String, type: String, policy text: String, fresh: Bool) async throws(ServiceError) -> SSHKeyReport {
        let algorithm = try SecuredKey.Algorithm(typeName: type)
        return try await storeKey(name, policy: text, fresh: fresh, origin: "SSH key made", algorithm: algorithm) {
            algorithm == .ecdsaP256 ? P256Key.generate() : Ed25519Key.generateSeed()
        }
    }

    /// The policy of a key an agent's `ssh-add FILE` seals, which names none.
    static let addedKeyPolicy = "biometry-any"

    public func sshAdd(_ name: String, publicKey: Data, seed: @escaping @Sendable () async throws -> SecretBytes,
                       policy text: String, fresh: Bool) async throws(ServiceError) -> SSHKeyReport {
        let algorithm: SecuredKey.Algorithm
        do {
            algorithm = try SecuredKey.Algorithm(typeName: (try SSHPublicKey(blob: [UInt8](publicKey))).typeName)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError.usage("the key to add: \(error)")
        }
        // An agent's ssh-add names no policy: an added key signs after any enrolled finger.
        let policy = text.isEmpty ? Self.addedKeyPolicy : text
        return try await storeKey(name, policy: policy, fresh: fresh, origin: "SSH key added", algorithm: algorithm,
                                  expecting: [UInt8](publicKey), seed: seed)
    }

    /// Seals the key `seed` gives as a new ``ItemKind/sshKey`` item: `seed` is called only
    /// once the name, the policy and the vault allow it; the item and its record are
    /// written together, and never over another item.
    ///
    /// A security key (`application` given) is stored as an ``ItemKind/sshSecurityKey``
    /// item whose value is the seed followed by the application.
    /// An ECDSA key is an ``ItemKind/sshECDSAKey`` item holding its scalar. With `expected`,
    /// the key's public blob must be that one (an added key's private half must be its own).
    func storeKey(_ name: String, policy text: String, fresh: Bool, origin: String, algorithm: SecuredKey.Algorithm = .ed25519,
                  application: String? = nil, expecting expected: [UInt8]? = nil,
                  seed: @escaping @Sendable () async throws -> SecretBytes) async throws(ServiceError) -> SSHKeyReport {
        let name = Self.storedName(name)
        return try await withStore { store in
            try Self.checkName(name, what: "SSH key")
            try Self.checkPolicy(text)
            let policy = try AccessPolicy(parsing: text)
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            let digest = try await enrollmentBinding(of: policy, "the key", context: context, device: nil)
            if try Self.findItem(name, in: context.vault) != nil {
                let shown = StoredText.escaped(name)
                throw ServiceError(.alreadyExists, "an item named '\(shown)' exists; nothing was changed (pick another "
                                   + "name, or remove it first: touchgate secret rm \(shown))")
            }
            let seed = try await seed()
            guard seed.count == 32 else {
                throw ServiceError.usage("an SSH key's private seed or scalar is 32 bytes, not \(seed.count)")
            }
            let secured = SecuredKey(algorithm: algorithm, secret: seed, application: application)
            let blob = try secured.blob
            if let expected, expected != blob {
                throw ServiceError.usage("the private key does not belong to the public key sent with it; nothing was stored")
            }
            let value = application.map { SecuredKey.value(seed: seed, application: $0) } ?? seed
            try atomicallyWithinQuota(context, item: name) { transaction in
                try transaction.setItem(named: name, value: value, kind: secured.kind,
                                        policy: policy.description, freshTouch: fresh, enrollmentDigest: digest, key: key,
                                        expecting: .absent, in: context.vault)
                try transaction.append(.itemWrite, .success, vaultUser: context.vault.owner, item: name,
                                       reason: "\(origin) (\(secured.typeName), \(policy)\(fresh ? ", fresh touch" : ""))")
            }
            return try Self.report(name: name, key: secured, policy: policy.description, fresh: fresh)
        }
    }

    public func sshList() async throws(ServiceError) -> [SSHKeyReport] {
        if let kept = keptKeyListing() { return Self.expiring(kept, at: clock.reading().wall) }
        return try await withExistingStore(orElse: noVault) { store in
            // Opened again only when the store changed: an agent lists keys before every
            // login, and reading the vault's identity was a third of a listing.
            let owner = principal.loginName
            let stamp = try store.snapshotStamp()
            let vault = try store.snapshot("ssh.list.vault", at: stamp) { try Vault.open(database: store.database, owner: owner) }
            // The public half is derived from the sealed seed, so listing needs the key held.
            guard let key = try store.custody(vault).currentKey() else {
                guard try vault.items().contains(where: { $0.kind.isSSHKey }) else { return [] }
                throw ServiceError.vaultLocked
            }
            return Self.expiring(try Self.keyReports(store, vault: vault, key: key, at: stamp), at: clock.reading().wall)
        }
    }

    /// `reports` with a lifetime that has run out shown as not offered.
    static func expiring(_ reports: [SSHKeyReport], at now: Date) -> [SSHKeyReport] {
        reports.map { report in
            guard let until = report.offeredUntil, now >= until else { return report }
            var expired = report
            expired.offered = false
            expired.offeredUntil = nil
            return expired
        }
    }

    /// The last listing, where the store stays open and nothing in its directory changed
    /// since (``StoreSnapshots/unchanged(_:as:_:as:)``), and the key is still held (checked as
    /// a listing always does: it counts as use). Measured: an agent lists keys before
    /// every login, on a cold cache; checking the store file by file was nearly all of it.
    package func keptKeyListing() -> [SSHKeyReport]? {
        guard let snapshots = openStores?.kept(at: location)?.snapshots,
              let (reports, vault) = snapshots.unchanged("ssh.list", as: [SSHKeyReport].self, "ssh.list.vault", as: Vault.self),
              (try? custody(vault).currentKey()) != nil else { return nil }
        return reports
    }

    /// The vault's SSH keys, public halves only, kept while the store stays open and
    /// unchanged (an agent lists keys before every login): measured, unsealing each key for
    /// every listing was most of `ssh-add -L`'s time in the agent.
    static func keyReports(_ store: StoreAccess, vault: Vault, key: VaultKey,
                           at stamp: StoreSnapshots.Stamp? = nil) throws -> [SSHKeyReport] {
        try store.snapshot("ssh.list", at: stamp) {
            // Each key's report is made again only when its row changed (its listing entry,
            // nonce included, differs): every signature adds an audit record, which changes
            // the store but no key, and unsealing each key for each listing was most of it.
            let earlier = store.lastSnapshot("ssh.list.keys", as: [String: KeptKeyReport].self) ?? [:]
            var kept: [String: KeptKeyReport] = [:]
            let reports = try vault.items().filter { $0.kind.isSSHKey && !$0.isInvalidated }.map { info in
                if let known = earlier[info.name], known.info == info {
                    kept[info.name] = known
                    return known.report
                }
                let secured = try SecuredKey(info, vault.item(named: info.name, key: key).value)
                let report = try Self.report(name: info.name, key: secured, policy: info.policy, fresh: info.freshTouch)
                kept[info.name] = KeptKeyReport(info: info, report: report)
                return report
            }
            store.keep("ssh.list.keys", kept)
            // Which the agents offer: kept with the listing (a change of them changes the
            // store, so the listing is made again); a lifetime is judged when it is read.
            return try sshOffers(store).apply(to: reports, at: .distantPast)
        }
    }

    /// A key's listing entry with the row it was made from.
    struct KeptKeyReport: Sendable {
        let info: VaultItemInfo
        let report: SSHKeyReport
    }

    public func sshSign(_ request: SSHSignRequest, interaction: any Interaction) async throws(ServiceError) -> SSHSignatureReport {
        try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            // The offers are read with the state's one check (a signature's measured cost).
            let offers = SSHOffers(from: try context.requireIntactState(reading: Self.sshOffersStateKey))
            guard let key = try context.custody.currentKey() else {
                try context.record(.itemRead, .denied, reason: "SSH signature: vault locked")
                throw ServiceError.vaultLocked
            }
            // The key asked for, found by its public half among the vault's keys: the last
            // listing kept names the item to unseal first, so one key is unsealed, not each
            // (a signature's audit record changes the store, so the listing is not rebuilt for
            // it); what signs is still the sealed key whose public half is the one asked for.
            let wanted = [UInt8](request.publicKey)
            let keys = try context.vault.items().filter { [.sshKey, .sshECDSAKey].contains($0.kind) && !$0.isInvalidated }
            func unsealed(among infos: [VaultItemInfo]) throws -> (info: VaultItemInfo, key: SecuredKey)? {
                for info in infos {
                    let secured = try SecuredKey(info, context.vault.item(named: info.name, key: key).value)
                    if try secured.blob == wanted { return (info, secured) }
                }
                return nil
            }
            let names = { (reports: [SSHKeyReport]) in Set(reports.filter { [UInt8]($0.publicKey) == wanted }.map(\.name)) }
            let hinted = names(store.lastSnapshot("ssh.list", as: [SSHKeyReport].self) ?? [])
            var found = try unsealed(among: keys.filter { hinted.contains($0.name) })
            if found == nil {
                let named = names(try Self.keyReports(store, vault: context.vault, key: key)).subtracting(hinted)
                let rest = keys.filter { !hinted.contains($0.name) }
                found = try unsealed(among: rest.filter { named.contains($0.name) } + rest.filter { !named.contains($0.name) })
            }
            guard let (info, secured) = found else {
                throw ServiceError(.notFound, "the vault holds no SSH key with that public key (touchgate ssh list shows them)")
            }
            let shown = StoredText.escaped(info.name)
            // Withdrawn from the agents (ssh-add -d, -D) or past its lifetime (-t): not offered,
            // so not used, as ssh-agent would no longer hold it.
            let fingerprint = SSHPublicKey.fingerprint(ofBlob: wanted, sha256: SHA256.digest)
            if offers.withdrawn.contains(fingerprint) || offers.until[fingerprint].map({ clock.reading().wall >= $0 }) == true {
                let why = "the key '\(shown)' is not offered to the agents (ssh-add -d, -D, or its lifetime from ssh-add -t ran "
                    + "out); it is still sealed in the vault: ssh-add its key file again, or run touchgate ssh offer \(shown)"
                try context.record(.itemRead, .denied, item: info.name, reason: "SSH signature refused: not offered")
                throw ServiceError(.forbidden, why)
            }
            let purpose: String
            switch SSHSigningPurpose.judge(request, keyName: shown, destinations: offers.destinations?[fingerprint]) {
            case .refused(let why):
                try context.record(.itemRead, .denied, item: info.name, reason: "SSH signature refused: \(why)")
                throw ServiceError(.forbidden, "\(why); nothing was signed")
            case .allowed(let words):
                purpose = words
            }
            try await authorize(try Self.signingDescriptor(of: info, for: purpose, in: context), .read, context: context,
                                key: key, device: nil, interaction: interaction, purpose: purpose)
            let signature = try secured.sign([UInt8](request.data))
            return SSHSignatureReport(signature: Data(try secured.publicKey.signatureBlob(signature)), purpose: purpose)
        }
    }

    /// The key's item as the policy core decides on it for a signature with `purpose`: the
    /// reuse window serves it only when the key's last signature within the longest window
    /// was for the same purpose (the same host, the same namespace), read from the audit
    /// trail; otherwise it needs a touch of its own. A touch to log in to one host is no
    /// touch for another.
    static func signingDescriptor(of info: VaultItemInfo, for purpose: String, in context: VaultContext) throws -> ItemDescriptor {
        var descriptor = try descriptor(of: info)
        guard !descriptor.requiresFreshTouch else { return descriptor }
        let since = Date().addingTimeInterval(-Double(PolicyConfiguration.maximumSessionTimeout.components.seconds))
        let last = try context.audit.records(AuditQuery(since: since, item: info.name, events: [.itemRead], outcomes: [.success],
                                                        limit: 1, order: .newestFirst))
        if last.first?.reason.hasPrefix(purpose + ": ") != true { descriptor.requiresFreshTouch = true }
        return descriptor
    }

    /// What `ssh-add -L` and `ssh list` show of a key.
    static func report(name: String, key: SecuredKey, policy: String, fresh: Bool) throws(ServiceError) -> SSHKeyReport {
        let blob = try key.blob
        return SSHKeyReport(name: name, type: key.typeName, publicKey: Data(blob),
                            authorizedKey: SSHPublicKey.authorizedKeysLine(typeName: key.typeName, blob: blob, comment: name),
                            fingerprint: SSHPublicKey.fingerprint(ofBlob: blob, sha256: SHA256.digest),
                            policy: policy, fresh: fresh)
    }
}

/// What a signature asked of an SSH key is for, judged from the signed bytes and the
/// sessions the connection was bound to: the words the prompt and the audit record use,
/// or why it is refused before anything is asked.
enum SSHSigningPurpose: Equatable {
    case allowed(String)
    case refused(String)

    static func judge(_ request: SSHSignRequest, keyName: String, what: String = "SSH key",
                      destinations: [SSHDestination]? = nil) -> SSHSigningPurpose {
        let data = [UInt8](request.data)
        guard data.count <= TouchgateService.maximumSignedBytes else {
            return .refused("the data to sign is \(data.count) bytes, more than an SSH login or signature needs")
        }
        var through = ""
        if let destinations, !destinations.isEmpty {
            // A key added with destinations (ssh-add -h) logs in over the hops they name and
            // signs nothing else, as ssh-agent has it.
            guard case .userAuthentication(let login) = SignedData.classify(data) else {
                return .refused("the key was added for destinations only (ssh-add -h), so it signs logins to them and "
                                + "nothing else")
            }
            switch DestinationPath.judge(request.bindings, user: login.user, destinations) {
            case .refused(let why): return .refused(why)
            case .allowed(let hosts): through = hosts.isEmpty ? "" : " through " + hosts.joined(separator: ", ")
            }
        } else if let hop = request.bindings.first(where: \.forwarding) {
            // A connection bound to a session through forwarding is another host asking.
            return .refused("the request came from another host through agent forwarding (forwarded to "
                            + forwardedHostWords(hop) + "); to let the key be used from there, add it again with "
                            + "ssh-add -h naming each hop")
        }
        let with = "use \(what) '\(keyName)'"
        switch SignedData.classify(data) {
        case .userAuthentication(let login):
            var words = "\(with) to log in as \(StoredText.escaped(login.user))"
            if let bound = request.bindings.last {
                guard [UInt8](bound.sessionID) == login.sessionIdentifier else {
                    return .refused("the login is for another session than the one the connection was bound to")
                }
                if let named = login.hostKey, named != [UInt8](bound.hostKey) {
                    return .refused("the login names another host key than the session's")
                }
                switch proof(of: bound) {
                case .forged:
                    return .refused("the host's proof of the session does not verify")
                case .verified(let fingerprint):
                    words += " on " + hostWords(bound, fingerprint: fingerprint) + through
                case .unchecked(let type):
                    // Only Ed25519 and P-256 proofs are checked here; what the words then say about
                    // the host is the client's claim, and is worded as one.
                    let claimed = SSHPublicKey.fingerprint(ofBlob: [UInt8](bound.hostKey), sha256: SHA256.digest)
                    words += " on a host whose \(StoredText.escaped(type)) key \(claimed) was not checked"
                }
            }
            return .allowed(words)
        case .sshsig(let signature):
            let namespace = StoredText.escaped(signature.namespace)
            switch signature.namespace {
            case "git": return .allowed("\(with) to sign a git commit or tag")
            case "file": return .allowed("\(with) to sign a file")
            default: return .allowed("\(with) to sign for '\(namespace)'")
            }
        case .other:
            return .allowed("\(with) to sign \(data.count) bytes that are neither a login nor a file signature")
        }
    }

    /// The host a verified binding is for: the names the user's known_hosts gives its key,
    /// or what known_hosts does not say, with the key's fingerprint.
    static func hostWords(_ binding: SSHSessionBinding, fingerprint: String) -> String {
        let names = (binding.hostNames ?? []).prefix(3).map { StoredText.escaped($0) }
        if !names.isEmpty { return names.joined(separator: ", ") + " (host key \(fingerprint))" }
        if let hashed = binding.hashedHostEntries, hashed > 0 {
            return "a host your known_hosts lists under a hashed name (host key \(fingerprint))"
        }
        if binding.hostNames != nil { return "a host not in your known_hosts (host key \(fingerprint))" }
        return "the host with key " + fingerprint
    }

    /// The host an agent connection was forwarded to, as its binding proves it (or says
    /// that it does not): the words a forwarding refusal names the hop with.
    static func forwardedHostWords(_ binding: SSHSessionBinding) -> String {
        switch proof(of: binding) {
        case .verified(let fingerprint): hostWords(binding, fingerprint: fingerprint)
        case .forged: "a host whose proof of the session does not verify"
        case .unchecked(let type):
            "a host whose \(StoredText.escaped(type)) key "
                + SSHPublicKey.fingerprint(ofBlob: [UInt8](binding.hostKey), sha256: SHA256.digest) + " was not checked"
        }
    }

    /// What a binding's proof shows.
    enum Proof: Equatable {
        /// The host key (this fingerprint) signed the session identifier.
        case verified(String)
        /// An Ed25519 or P-256 host key that did not sign it, or a proof that cannot be read.
        case forged
        /// A host key of another type (RSA), which is not checked here.
        case unchecked(String)
    }

    /// Whether a binding's signature is its host key's over its session identifier.
    static func proof(of binding: SSHSessionBinding) -> Proof {
        let host: SSHPublicKey
        do {
            host = try SSHPublicKey(blob: [UInt8](binding.hostKey))
        } catch .unsupportedKeyType(let type) {
            return .unchecked(type)
        } catch {
            return .forged
        }
        let verified: Bool
        switch host {
        case .ed25519(let publicKey):
            verified = (try? SSHPublicKey.ed25519Signature(fromBlob: [UInt8](binding.signature))).map {
                Ed25519Key.verify($0, of: [UInt8](binding.sessionID), publicKey: publicKey)
            } ?? false
        case .ecdsaP256(let point):
            verified = (try? SSHPublicKey.p256Signature(fromBlob: [UInt8](binding.signature))).map {
                P256Key.verify($0, of: [UInt8](binding.sessionID), publicKey: point)
            } ?? false
        }
        return verified ? .verified(host.fingerprint(sha256: SHA256.digest)) : .forged
    }

}
