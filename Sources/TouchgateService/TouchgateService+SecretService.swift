import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

/// The Secret Service's use cases: what `touchgate agent`'s provider asks for the programs
/// on the user's session bus. Items are vault items with ``ItemDetails`` beside them; the
/// rule added here is per application: the first read of an item by a program needs a touch
/// that names the program, remembered for the reuse window (``ApplicationApprovals``), unless
/// `touchgate secret allow` let that program read it for good.
extension TouchgateService {
    /// Where the approvals live in the authenticated state.
    static let approvalsStateKey = "secret-service.approvals"
    /// The policy of an item a program stores: any enrolled finger, with the reuse window.
    static let secretServicePolicy = "biometry-any"

    public func secretServiceSearch(_ attributes: [SecretAttribute], collection: String?,
                                    application: ApplicationIdentity?) async throws(ServiceError) -> SecretServiceSearchReport {
        try await withStore { store in
            guard try store.vaultExists() else { return SecretServiceSearchReport(locked: true, items: []) }
            let context = try store.vault()
            let held = try context.custody.currentKey() != nil
            let approvals = held && application != nil ? try Self.approvals(context) : ApplicationApprovals()
            let now = context.evaluator.clock.reading().monotonic
            let window = context.evaluator.configuration.sessionTimeout
            let items = try context.vault.items().compactMap { info -> SecretServiceItemReport? in
                guard info.kind == .secret, !info.isInvalidated, let details = Self.details(of: info),
                      collection == nil || details.collection == collection, details.matches(attributes) else { return nil }
                let unlocked = held && application.map { app in
                    app.mayBeApproved && details.allowed.contains(app.executable)
                        || app.mayBeApproved
                        && approvals.isApproved(item: info.name, executable: app.executable, at: now, window: window)
                } == true
                return SecretServiceItemReport(name: info.name, details: details, policy: info.policy,
                                               created: info.createdAt, modified: info.updatedAt, unlocked: unlocked)
            }
            return SecretServiceSearchReport(locked: !held, items: items)
        }
    }

    public func secretServiceStore(_ details: ItemDetails, value: @escaping @Sendable () async throws -> SecretBytes,
                                   replace: Bool, application: ApplicationIdentity,
                                   interaction: any Interaction) async throws(ServiceError) -> StoredReport {
        try Self.checkSize(details)
        let found = try await secretServiceSearch(details.attributes, collection: details.collection,
                                                  application: application).items
        // The same attributes, not more: a replace is of the item those attributes name.
        let same = found.first { $0.details.attributes == details.attributes }
        if replace, let same, !same.unlocked {
            // Overwriting an item is as much as reading it: a program not approved for it
            // needs the touch that names it first (else it could swap a password unseen).
            _ = try await secretServiceRead(same.name, application: application, approveOnly: true,
                                            interaction: interaction)
        }
        var stored = details
        // Who may read it without a touch is the person's to say (secret allow), never the storing program's.
        stored.allowed = replace ? same?.details.allowed ?? [] : []
        let name: String
        if replace, let same {
            name = same.name
        } else {
            let taken = Set(try await secretList().map(\.name))
            name = Self.itemName(forLabel: details.label, taken: taken)
        }
        let existing = replace ? same : nil
        return try await secretAdd(name, value: value, policy: existing?.policy ?? Self.secretServicePolicy,
                                   fresh: false, replace: true, device: nil, details: try Self.encoded(stored),
                                   interaction: interaction)
    }

    public func secretServiceRead(_ name: String, application: ApplicationIdentity, approveOnly: Bool,
                                  interaction: any Interaction) async throws(ServiceError) -> SecretBytes? {
        try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.keyForRelease(of: name)
            let found = try Self.item(name, in: context.vault)
            // The list of programs allowed for good decides who is asked to touch: it is
            // trusted only once the item's seal vouches for it.
            let info = try context.recordingIntegrity(of: found.name) {
                try context.vault.authenticatedInfo(named: found.name, key: key)
            }
            let shown = StoredText.escaped(info.name)
            guard info.kind == .secret, let details = Self.details(of: info) else {
                try context.record(.itemRead, .denied, item: info.name, reason: "not a Secret Service item")
                throw ServiceError(.forbidden, "'\(shown)' was not stored through the Secret Service, so no program on "
                                   + "the session bus may read it; read it with touchgate secret get")
            }
            let program = StoredText.escaped(PathText.lastComponent(of: application.executable))
            var descriptor = try Self.descriptor(of: info)
            let window = context.evaluator.configuration.sessionTimeout
            let now = context.evaluator.clock.reading().monotonic
            var approvedNow = false
            if let doubt = application.doubt {
                // Not the program it looks like, or not for sure: asked every time, for this
                // read alone, and nothing remembered that the real program could inherit.
                descriptor.requiresFreshTouch = true
                try await authorize(descriptor, .read, context: context, key: key, device: nil, interaction: interaction,
                                    purpose: "let a process that is not plainly \(program) read '\(shown)' "
                                        + "(\(StoredText.escaped(doubt)))")
                approvedNow = true
            } else if !details.allowed.contains(application.executable),
               try !Self.approvals(context).isApproved(item: info.name, executable: application.executable, at: now,
                                                       window: window) {
                // A program's first read needs a touch made for it: the reuse window of another
                // program's touch does not stand for this one.
                descriptor.requiresFreshTouch = true
                try await authorize(descriptor, .read, context: context, key: key, device: nil, interaction: interaction,
                                    purpose: "let \(program) read '\(shown)'")
                let at = context.evaluator.clock.reading().monotonic
                try context.stateStore.updateState(Self.approvalsStateKey) { data in
                    var approvals = Self.approvals(from: data)
                    // With no reuse window the touch stands for the one read that follows (a
                    // program unlocks, then reads in a call of its own).
                    approvals.approve(item: info.name, executable: application.executable, at: at, window: window,
                                      singleUseWithoutWindow: true)
                    data = try JSONEncoder().encode(approvals)
                }
                approvedNow = true
            }
            if approveOnly { return nil }
            if !approvedNow, window <= .zero {
                // The read an unlock's touch was for: spent now, it was this read's touch.
                var spent = false
                try context.stateStore.updateState(Self.approvalsStateKey) { data in
                    var approvals = Self.approvals(from: data)
                    spent = approvals.consume(item: info.name, executable: application.executable, at: now)
                    data = try JSONEncoder().encode(approvals)
                }
                approvedNow = spent
            }
            if !approvedNow {
                try await authorize(descriptor, .read, context: context, key: key, device: nil, interaction: interaction,
                                    purpose: "give '\(shown)' to \(program)")
            }
            return try context.recordingIntegrity(of: info.name) { try context.vault.item(named: info.name, key: key).value }
        }
    }

    public func secretServiceDelete(_ name: String, application: ApplicationIdentity,
                                    interaction: any Interaction) async throws(ServiceError) {
        guard let found = try await secretServiceSearch([], collection: nil, application: application).items
            .first(where: { $0.name == Self.storedName(name) }) else {
            throw ServiceError.from(VaultError.itemNotFound(name: Self.storedName(name)))
        }
        if !found.unlocked {
            // Deleting an item is as much as reading it: a program not approved for it needs
            // the touch that names it first.
            _ = try await secretServiceRead(found.name, application: application, approveOnly: true, interaction: interaction)
        }
        try await secretRm(found.name, interaction: interaction)
    }

    public func secretAllow(_ name: String, executable: String, revoke: Bool,
                            interaction: any Interaction) async throws(ServiceError) -> AllowReport {
        guard executable.hasPrefix("/"), !executable.contains("\0") else {
            throw ServiceError.usage("give the program as an absolute path, such as /usr/bin/secret-tool "
                                     + "(command -v NAME prints it)")
        }
        return try await withStore { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            let info = try Self.item(name, in: context.vault)
            let shown = StoredText.escaped(info.name), program = StoredText.escaped(executable)
            guard info.kind == .secret, var details = Self.details(of: info) else {
                throw ServiceError.usage("'\(shown)' was not stored through the Secret Service; secret allow is for the "
                                         + "items programs keep there (touchgate secret list --json shows which)")
            }
            if revoke {
                guard details.allowed.contains(executable) else { return AllowReport(name: info.name, allowed: details.allowed) }
                details.allowed.removeAll { $0 == executable }
            } else {
                guard !details.allowed.contains(executable) else { return AllowReport(name: info.name, allowed: details.allowed) }
                details.allowed = (details.allowed + [executable]).sorted()
            }
            var descriptor = try Self.descriptor(of: info)
            descriptor.requiresFreshTouch = true
            try await authorize(descriptor, .write, context: context, key: key, device: nil, interaction: interaction,
                                purpose: revoke ? "stop letting \(program) read '\(shown)' without a touch"
                                    : "let \(program) read '\(shown)' without a touch, for good")
            let value = try context.vault.item(named: info.name, key: key).value
            let encoded = try Self.encoded(details)
            try atomicallyWithinQuota(context, item: info.name) { transaction in
                try transaction.setItem(named: info.name, value: value, policy: info.policy, freshTouch: info.freshTouch,
                                        enrollmentDigest: info.enrollmentDigest, details: encoded, key: key,
                                        expecting: .version(info.version), in: context.vault)
                try Self.forgetApprovals(of: info.name, in: transaction)
                try transaction.append(.policyChange, .success, vaultUser: context.vault.owner, item: info.name,
                                       reason: revoke ? "\(program) no longer reads it without a touch"
                                           : "\(program) reads it without a touch of its own")
            }
            return AllowReport(name: info.name, allowed: details.allowed)
        }
    }

    /// The most items one import may bring.
    static let maximumImport = 10_000

    public func importSecretService(_ details: [ItemDetails], values: @escaping @Sendable () async throws -> SecretBytes,
                                    interaction: any Interaction) async throws(ServiceError) -> SecretServiceImportReport {
        guard details.count <= Self.maximumImport else {
            throw ServiceError.usage("at most \(Self.maximumImport) items are imported at once; nothing was imported")
        }
        for item in details {
            try Self.checkSize(item)
        }
        return try await withStore { store in
            let context = try store.vault()
            try context.requireIntactState()
            let key = try context.requireKey()
            let held = try context.vault.items().compactMap { info in Self.details(of: info).map { (info.name, $0) } }
            var taken = Set(try context.vault.items().map(\.name))
            var plan: [(name: String, details: ItemDetails, index: Int)] = [], skipped: [String] = []
            for (index, item) in details.enumerated() {
                var item = item
                item.allowed = []
                if let same = held.first(where: { $0.1.collection == item.collection && $0.1.attributes == item.attributes })
                    ?? plan.first(where: { $0.details.collection == item.collection && $0.details.attributes == item.attributes })
                        .map({ ($0.name, $0.details) }) {
                    skipped.append(same.0)
                    continue
                }
                let name = Self.itemName(forLabel: item.label, taken: taken)
                taken.insert(name)
                plan.append((name, item, index))
            }
            guard !plan.isEmpty else { return SecretServiceImportReport(imported: [], skipped: skipped) }
            // One touch for the whole import, made for it.
            let descriptor = ItemDescriptor(name: "secret service import", policy: try AccessPolicy(parsing: Self.secretServicePolicy),
                                            boundEnrollmentState: nil, requiresFreshTouch: true)
            try await authorize(descriptor, .write, context: context, key: key, device: nil, interaction: interaction,
                                purpose: "import \(plan.count) item\(plan.count == 1 ? "" : "s") from the Secret Service")
            let unpacked = try PackedValues.unpack(try await values(), count: details.count)
            let policy = try AccessPolicy(parsing: Self.secretServicePolicy).description
            // All or nothing, the quota included.
            try atomicallyWithinQuota(context, item: nil) { transaction in
                for entry in plan {
                    let encoded = try Self.encoded(entry.details)
                    try transaction.setItem(named: entry.name, value: unpacked[entry.index], policy: policy, freshTouch: false,
                                            enrollmentDigest: nil, details: encoded, key: key, expecting: .absent,
                                            in: context.vault)
                    try Self.forgetApprovals(of: entry.name, in: transaction)
                    try transaction.append(.itemWrite, .success, vaultUser: context.vault.owner, item: entry.name,
                                           reason: "imported from the Secret Service (\(policy))")
                }
            }
            return SecretServiceImportReport(imported: plan.map(\.name), skipped: skipped)
        }
    }

    /// Refuses attributes, labels and content types past the bounds.
    static func checkSize(_ details: ItemDetails) throws(ServiceError) {
        guard details.attributes.count <= maximumAttributes,
              details.attributes.allSatisfy({ $0.name.utf8.count + $0.value.utf8.count <= maximumAttributeBytes }),
              details.label.utf8.count <= StoredText.maximumNameBytes * 4, details.contentType.utf8.count <= 255,
              details.collection.utf8.count <= 255 else {
            throw ServiceError.usage("an item may have at most \(maximumAttributes) attributes of at most "
                                     + "\(maximumAttributeBytes) bytes each, a label of at most "
                                     + "\(StoredText.maximumNameBytes * 4) bytes; nothing was stored")
        }
    }

    /// The most lookup attributes one item may have, and the most bytes of one (name and value).
    static let maximumAttributes = 64
    static let maximumAttributeBytes = 4096

    /// The Secret Service details of `info`, or nil for an item stored otherwise (or whose
    /// details do not parse, which its seal would refuse anyway).
    static func details(of info: VaultItemInfo) -> ItemDetails? {
        guard let text = info.details else { return nil }
        return try? JSONDecoder().decode(ItemDetails.self, from: Data(text.utf8))
    }

    static func encoded(_ details: ItemDetails) throws(ServiceError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(details), as: UTF8.self)
        } catch {
            throw ServiceError(.error, "cannot encode the item's attributes: \(error)")
        }
    }

    /// The approvals kept in the authenticated state.
    static func approvals(_ context: VaultContext) throws -> ApplicationApprovals {
        approvals(from: try context.stateStore.state(approvalsStateKey))
    }

    /// Forgets the programs approved for `name` (deleted, or a new item under its name).
    static func forgetApprovals(of name: String, in transaction: StoreTransaction) throws {
        try transaction.updateState(approvalsStateKey) { data in
            guard data != nil else { return }
            var approvals = approvals(from: data)
            approvals.forget(item: name)
            data = try JSONEncoder().encode(approvals)
        }
    }

    static func approvals(from data: Data?) -> ApplicationApprovals {
        data.flatMap { try? JSONDecoder().decode(ApplicationApprovals.self, from: $0) } ?? ApplicationApprovals()
    }

    /// A vault name for an item labelled `label`: the label with what a name may not hold
    /// made plain spaces, and ` (2)`, ` (3)`… after it when taken.
    static func itemName(forLabel label: String, taken: Set<String>) -> String {
        var cleaned = String(String.UnicodeScalarView(storedName(label).unicodeScalars.map { scalar in
            scalar.properties.generalCategory == .control || StoredText.isInvisible(scalar)
                || (scalar.properties.isWhitespace && scalar != " ") ? " " : scalar
        }))
        while cleaned.contains("  ") { cleaned = cleaned.replacing("  ", with: " ") }
        cleaned = cleaned.trimmingSpaces()
        while cleaned.utf8.count > StoredText.maximumNameBytes - 8 { cleaned.removeLast() }
        if cleaned.isEmpty { cleaned = "Secret Service item" }
        var name = cleaned, number = 2
        while taken.contains(name) || StoredText.problem(withName: name, what: "secret") != nil {
            name = "\(cleaned) (\(number))"
            number += 1
            if number > 10_000 { return "\(cleaned) \(UUID().uuidString.prefix(8).lowercased())" }
        }
        return name
    }
}
