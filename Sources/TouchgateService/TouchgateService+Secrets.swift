import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// What a refusal for want of confirmation adds: an answer of no needs nothing more, and
    /// where no terminal could ask, this is how to confirm.
    static let withoutTerminal = "where no terminal can ask, pass --yes to confirm"
}

extension TouchgateService {
    /// Checks a policy given in string form (`biometry-any`, `a|b`, `a&b`, …).
    /// - Throws: ``ServiceError`` (usage) saying what is wrong with it.
    public static func checkPolicy(_ text: String) throws(ServiceError) {
        do {
            _ = try AccessPolicy(parsing: text)
        } catch {
            throw ServiceError.invalidPolicy(error)
        }
    }

    /// Releases the value of `name` once its policy is satisfied.
    ///
    /// Order: the key must be held; the policy is evaluated (a lockout refuses before any
    /// reader is opened; the reader is opened only if a touch is needed); the grant is
    /// audited durably; only then is the item decrypted. A decryption failure after a
    /// grant is audited as `integrity.failure`.
    public func secretGet(_ name: String, device: String? = nil,
                        interaction: any Interaction) async throws(ServiceError) -> SecretBytes {
        try await secretGet(name, touchNow: false, device: device, interaction: interaction)
    }

    /// Releases the value of `name` as ``secretGet(_:device:interaction:)`` does.
    ///
    /// With `touchNow`, the release must be decided by a touch made for it: no reuse
    /// session counts, and an item whose policy can be met without a finger is refused
    /// before anything is asked (a PAM login that releases a password is a fingerprint
    /// login, never a passphrase or an earlier touch).
    public func secretGet(_ name: String, touchNow: Bool, device: String? = nil,
                        interaction: any Interaction) async throws(ServiceError) -> SecretBytes {
        try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.keyForRelease(of: name)
            let info = try Self.item(name, in: context.vault)
            let name = info.name
            guard info.kind == .secret else {
                let shown = StoredText.escaped(name)
                try context.record(.itemRead, .denied, item: name, reason: "an SSH key is never released")
                throw ServiceError(.forbidden, "'\(shown)' is an SSH key: it signs through touchgate agent and never leaves "
                                   + "the vault; see touchgate ssh list")
            }
            var descriptor = try Self.descriptor(of: info)
            if touchNow {
                guard !descriptor.policy.isSatisfiableWithoutBiometry else {
                    let shown = StoredText.escaped(name)
                    throw ServiceError.usage("'\(shown)' can be released without a finger (policy \(descriptor.policy)), "
                                             + "so it cannot stand for a touch; store it with one that needs a finger: "
                                             + "touchgate secret add \(shown) --policy biometry-any --replace")
                }
                descriptor.requiresFreshTouch = true
            }
            try await authorize(descriptor, .read, context: context, key: key, device: device,
                                interaction: interaction)
            return try context.recordingIntegrity(of: name) { try context.vault.item(named: name, key: key).value }
        }
    }

    /// Stores the value `value` yields under `name` with `policy`. `value` is called once
    /// the request is known to be possible (vault unlocked, policy valid), so nothing is
    /// asked for in vain. Replacing a live item needs what its current policy asks for;
    /// the check and the write cannot be separated by another writer.
    public func secretAdd(_ name: String, value: @escaping @Sendable () async throws -> SecretBytes, policy text: String, fresh: Bool,
                      replace: Bool = false, device: String? = nil,
                      interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        try await secretAdd(name, value: value, policy: text, fresh: fresh, replace: replace, device: device,
                            details: nil, interaction: interaction)
    }

    /// ``secretAdd(_:value:policy:fresh:replace:device:interaction:)`` with the Secret
    /// Service's `details` (JSON) stored and authenticated with the item.
    func secretAdd(_ name: String, value: @escaping @Sendable () async throws -> SecretBytes, policy text: String, fresh: Bool,
                   replace: Bool, device: String?, details: String?,
                   interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        let name = Self.storedName(name)
        return try await withStore { store in
            try Self.checkName(name, what: "secret")
            try Self.checkPolicy(text)
            let policy = try AccessPolicy(parsing: text)
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            let digest = try await enrollmentBinding(of: policy, "the item", context: context, device: device)
            // Also an item an earlier release stored under another spelling of the name: it is replaced, not doubled.
            let old = try Self.findItem(name, in: context.vault)
            if let old, old.kind != .secret {
                let shown = StoredText.escaped(old.name)
                throw ServiceError(.alreadyExists, "'\(shown)' is an SSH key, which a secret cannot replace; nothing was "
                                   + "changed (pick another name, or remove the key first: touchgate secret rm \(shown))")
            }
            if let old, !old.isInvalidated, !replace {
                let shown = StoredText.escaped(name)
                guard try await interaction.confirm("A secret named '\(shown)' exists. Replace it?", details: []) else {
                    throw ServiceError(.alreadyExists, "a secret named '\(shown)' exists; nothing was changed "
                                       + "(confirm at the terminal, or pass --replace)")
                }
            }
            let value = try await value()
            if let old, !old.isInvalidated {
                // Replacing a live item needs what reading it needs; the evaluator audits the authorization.
                try await authorize(try Self.descriptor(of: old), .write, context: context, key: key, device: device,
                                    interaction: interaction)
            }
            let oldPolicy = old.flatMap { AccessPolicy($0.policy) }
            // The write happens only if the item is still the one authorized (or still absent),
            // together with its records: concurrent writers cannot skip the authorization. Past
            // the quota, none of it is kept.
            try atomicallyWithinQuota(context, item: name) { transaction in
                var expecting: ItemExpectation = old.map { .version($0.version) } ?? .absent
                if let old, !Self.sameBytes(old.name, name) {
                    // The old spelling goes in the same transaction; the item lives on under the NFC one.
                    try transaction.deleteItem(named: old.name, expecting: expecting, in: context.vault)
                    expecting = .absent
                }
                // Replaced from the command line, a Secret Service item stays one.
                try transaction.setItem(named: name, value: value, policy: policy.description, freshTouch: fresh,
                                        enrollmentDigest: digest, details: details ?? old?.details, key: key,
                                        expecting: expecting, in: context.vault)
                // A new item under a name used before starts with no program approved for it.
                if old == nil { try Self.forgetApprovals(of: name, in: transaction) }
                try transaction.append(.itemWrite, .success, vaultUser: context.vault.owner, item: name,
                                       reason: old == nil ? "created (\(policy)\(fresh ? ", fresh touch" : ""))"
                                           : old!.isInvalidated ? "replaced an invalidated item" : "replaced")
                if let old, oldPolicy != policy || old.freshTouch != fresh {
                    try transaction.append(.policyChange, .success, vaultUser: context.vault.owner, item: name,
                                           reason: "\(oldPolicy?.description ?? "none") -> \(policy)")
                }
            }
            return StoredReport(name: name, policy: policy.description, fresh: fresh, replaced: old != nil)
        }
    }

    /// Every stored secret: names and policies, never values. Works while locked.
    public func secretList() async throws(ServiceError) -> [ItemReport] {
        try await withStore { store in
            try store.snapshot("items") {
                try store.vault().vault.items().filter { $0.kind == .secret }.map { item in
                    ItemReport(name: item.name, policy: item.policy, fresh: item.freshTouch,
                               boundToFingers: item.enrollmentDigest != nil, invalidated: item.isInvalidated,
                               updated: item.updatedAt)
                }
            }
        }
    }

    /// Deletes `name` once the person confirms. Needs the key held, not a touch (deleting
    /// releases nothing); audited.
    public func secretRm(_ name: String, interaction: any Interaction) async throws(ServiceError) {
        try await withStore { store in
            let context = try store.vault()
            try context.requireIntactState()
            _ = try context.requireKey()
            let found = try Self.findItem(name, in: context.vault)
            let name = found?.name ?? Self.storedName(name)
            let shown = StoredText.escaped(name)
            if let found {
                let what = found.kind == .secret ? "secret" : found.kind == .passkey ? "passkey" : "SSH key"
                guard try await interaction.confirm("Delete the \(what) '\(shown)'? It cannot be recovered.", details: []) else {
                    throw ServiceError(.declined, "not confirmed, so '\(shown)' was not deleted (\(Self.withoutTerminal))")
                }
            }
            // On a full disk the reserve makes room: deleting is how a user frees space.
            let deleted = try await usingReserve(for: "secret rm") {
                try context.audit.atomically { transaction in
                    guard try transaction.deleteItem(named: name, in: context.vault) else { return false }
                    try Self.forgetApprovals(of: name, in: transaction)
                    try transaction.append(.itemDelete, .success, vaultUser: context.vault.owner, item: name,
                                           reason: "deleted by user")
                    return true
                }
            }
            guard deleted else {
                try context.record(.itemDelete, .error, item: name, reason: "no such item")
                throw VaultError.itemNotFound(name: name)
            }
        }
    }

    /// The enrolled set a new item under `policy` is bound to: the current one's digest for
    /// `biometry-current-set`, nil for any other policy.
    /// - Throws: `nothing-enrolled` when the policy binds to fingers and none is enrolled.
    func enrollmentBinding(of policy: AccessPolicy, _ what: String, context: VaultContext,
                           device: String?) async throws -> [UInt8]? {
        guard policy.referencesCurrentSet else { return nil }
        let enrollment = try await currentEnrollment(context, device: device)
        guard enrollment.printCount > 0 else {
            throw ServiceError.nothingEnrolled("biometry-current-set binds \(what) to the enrolled fingers, "
                                               + "and none is enrolled; run: touchgate enroll")
        }
        return enrollment.state.digest
    }

    /// Asks the evaluator for `operation` on `item`, with a lazily opened reader and the
    /// passphrase as fallback; the evaluator audits the decision.
    @discardableResult
    func authorize(_ item: ItemDescriptor, _ operation: ItemOperation, context: VaultContext, key: VaultKey,
                   device: String?, interaction: any Interaction, purpose: String? = nil) async throws -> Grant {
        if case .fprintd(let target) = try await resolveBackend(device: device) {
            return try await target.closing { target in
                try await fprintdAuthorize(item, operation, context: context, target: target, interaction: interaction,
                                           purpose: purpose)
            }
        }
        let enrollment = try EnrollmentTracker.status(context.guarded)
        let sensor = ReaderSensor(device: device, readers: readers, interaction: interaction,
                                  prints: { try context.printStore(key: key) })
        let verifier = context.verifier(interaction)
        let grant: Grant
        do {
            grant = try await context.evaluator.authorize(item: item, operation: operation, enrollment: enrollment,
                                                          sensor: sensor, passphrase: verifier, purpose: purpose)
        } catch {
            await sensor.close()
            if error == .readerUnavailable, let cause = await sensor.lastFailure { throw cause }
            throw verifier.explain(error)
        }
        await sensor.close()
        return grant
    }

    /// The stored item `name` names (see ``findItem(_:in:)``).
    /// - Throws: ``VaultError/itemNotFound(name:)``.
    static func item(_ name: String, in vault: Vault) throws -> VaultItemInfo {
        guard let info = try findItem(name, in: vault) else {
            throw VaultError.itemNotFound(name: storedName(name))
        }
        return info
    }

    /// The stored item `name` names, or nil: the one under the name's NFC form
    /// (``storedName(_:)``); failing that, one stored by a release that kept names as
    /// typed, under the exact bytes given or else under the only other spelling of the same
    /// text. So items stored before names were normalised stay readable and removable,
    /// typed either way.
    /// - Throws: ``ServiceError`` `usage` when several old spellings of the name exist and
    ///   none is the one given.
    static func findItem(_ name: String, in vault: Vault) throws -> VaultItemInfo? {
        let normal = storedName(name)
        if let info = try vault.itemInfo(named: normal) { return info }
        if !sameBytes(name, normal), let info = try vault.itemInfo(named: name) { return info }
        // `==` on String is canonical equivalence: exactly the other spellings of the name.
        let spellings = try vault.items().filter { $0.name == normal }
        guard spellings.count <= 1 else {
            let shown = StoredText.escaped(normal)
            throw ServiceError.usage("\(spellings.count) items are named '\(shown)' in different Unicode spellings "
                                     + "(stored by an earlier release); type the name exactly as stored, or remove "
                                     + "the extra ones with touchgate secret rm")
        }
        return spellings.first
    }

    /// What the policy core needs to know about a stored item.
    static func descriptor(of info: VaultItemInfo) throws -> ItemDescriptor {
        let policy: AccessPolicy
        do {
            policy = try AccessPolicy(parsing: info.policy)
        } catch {
            throw VaultError.integrity(what: "the policy of item \"\(StoredText.escaped(info.name))\"")
        }
        return ItemDescriptor(name: info.name, policy: policy,
                              boundEnrollmentState: info.enrollmentDigest.map(EnrollmentState.init(digest:)),
                              requiresFreshTouch: info.freshTouch)
    }
}
