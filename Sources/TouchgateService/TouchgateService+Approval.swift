import FoundationEssentials
import TouchgatePolicy
import TouchgateCrypto
import TouchgateVault
public import TouchgateAPI

/// The person's side of an approval: events and confirmations as the wrapped interaction
/// has them, but never a passphrase. An approval is a touch; the terminal an agent's command
/// runs on may be the agent's own, which would read a passphrase typed there.
struct TouchOnly: Interaction {
    let wrapped: any Interaction
    init(_ wrapped: any Interaction) { self.wrapped = wrapped }

    func event(_ event: InteractionEvent) { wrapped.event(event) }
    func passphrase(prompt: String, again: Bool) async throws -> SecretBytes { throw Self.refusal }
    func newPassphrase(prompt: String) async throws -> SecretBytes { throw Self.refusal }
    func repeatPassphrase(prompt: String) async throws -> SecretBytes { throw Self.refusal }
    var canAskAgain: Bool { false }
    func confirm(_ question: String, details: [String]) async throws -> Bool { false }

    static let refusal = ServiceError(.passphraseRequired, "an approval is a touch, never a passphrase typed where an "
                                      + "agent may read it: unlock the vault yourself (touchgate unlock), and store the "
                                      + "item with a policy a finger satisfies")
}

/// Approvals by a touch for what an agent wants done: a command run with secrets, or an
/// action it describes. The person sees the command, the directory, the secrets by name, the
/// reason and who asks; the touch approves exactly that (the digest binds it, with the asking
/// processes); the decision is recorded in the trail and signed into a receipt either way.
extension TouchgateService {
    public func approve(_ request: ApprovalRequest, device: String?,
                        interaction: any Interaction) async throws(ServiceError) -> (ApprovalReport, SecretBytes?) {
        if let problem = request.problem { throw ServiceError.usage(problem) }
        // Decided here, for every door: an approval is a touch, never a passphrase.
        let interaction = TouchOnly(interaction)
        let asker = Asker(caller ?? .thisProcess())
        let digest = Self.approvalDigest(request, asker: asker)
        let purpose = request.headline + " (approval \(digest))"
        if request.secrets.isEmpty { try await refuseWithoutStore(device: device) }
        return try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            // What is shown before the touch: the request, and who asks.
            interaction.event(InteractionEvent(.notice, (["Approve with a touch:"] + request.summary
                + ["asked by:  \(asker.process)"] + asker.chain.prefix(4).map { "           child of \($0)" })
                .joined(separator: "\n")))
            var items: [VaultItemInfo] = []
            var decision: (match: String?, refusal: ServiceError?)
            if request.secrets.isEmpty {
                decision = await Self.decide {
                    let report = try await self.match(store, ReaderSensor.Candidates(user: self.principal.loginName, finger: nil),
                                                      operation: "verify", action: purpose, device: device,
                                                      interaction: interaction)
                    guard report.match else {
                        throw ServiceError(.noMatch, "the finger did not match: nothing was approved"
                                           + (report.attemptsLeft.map { " (\($0) tries left before a lockout)" } ?? ""),
                                           attemptsLeft: report.attemptsLeft)
                    }
                    return report.finger.map { "finger \($0)" } ?? "finger"
                }
            } else {
                let key = try context.keyForRelease(of: request.secrets[0].item)
                for binding in request.secrets {
                    let info = try Self.item(binding.item, in: context.vault)
                    guard info.kind == .secret else {
                        throw ServiceError(.forbidden, "'\(StoredText.escaped(info.name))' is an SSH key: it signs through "
                                           + "touchgate agent and is never put in a command's environment")
                    }
                    items.append(info)
                }
                let descriptor = try Self.approvalDescriptor(for: items, enrollment: EnrollmentTracker.status(context.guarded))
                let lease = Self.leaseWindow(for: items, settings: context.settings)
                if let lease, let since = try Self.leased(digest, within: lease, context: context, clock: clock),
                   try context.evaluator.status().lockout == nil {
                    // The same request from the same processes, approved within the lease: recorded, not asked.
                    try context.record(.itemRead, .success, item: descriptor.name,
                                       reason: "\(purpose): the lease of the touch \(since) s ago")
                    decision = ("lease of a touch \(since) s ago", nil)
                } else {
                    decision = await Self.decide {
                        let grant = try await self.authorize(descriptor, .read, context: context, key: key, device: device,
                                                             interaction: interaction, purpose: purpose)
                        return grant.matchedPrint.flatMap(EnrollmentTracker.finger(in:)).map { "finger \($0)" }
                            ?? (grant.factors.contains(.biometry) ? "finger" : "passphrase")
                    }
                    if decision.refusal == nil, let lease {
                        try Self.grantLease(digest, within: lease, context: context, clock: clock)
                    }
                }
                if decision.refusal == nil {
                    let values = try items.map { info in
                        try context.recordingIntegrity(of: info.name) { try context.vault.item(named: info.name, key: key).value }
                    }
                    let report = ApprovalReport(receipt: Self.receipt(request, digest: digest, asker: asker,
                                                                      user: context.vault.owner, decision: decision,
                                                                      audit: context.audit),
                                                refusal: nil)
                    return (report, PackedValues.pack(values))
                }
            }
            let report = ApprovalReport(receipt: Self.receipt(request, digest: digest, asker: asker, user: context.vault.owner,
                                                              decision: decision, audit: context.audit),
                                        refusal: decision.refusal)
            // An approved command with no secrets runs all the same: no values, but some.
            let none = request.command != nil && decision.refusal == nil ? PackedValues.pack([]) : nil
            return (report, none)
        }
    }

    /// The state key of the run leases (``leaseWindow(for:settings:)``).
    static let runLeasesStateKey = "run.leases"

    /// How long an approval of a run with `items` may be used again without a touch: the
    /// run lease (`touchgate policy set --run-lease`), unless it is off or an item is `--fresh`.
    static func leaseWindow(for items: [VaultItemInfo], settings: PolicySettings) -> Duration? {
        guard let seconds = settings.runLeaseSeconds, seconds > 0, !items.contains(where: \.freshTouch) else { return nil }
        return .seconds(seconds)
    }

    /// How many seconds ago `digest` was approved by a touch, when that is within `window`
    /// in this boot (a lease is kept in the authenticated state, as the Secret Service's approvals).
    static func leased(_ digest: String, within window: Duration, context: VaultContext,
                       clock: any PolicyClock) throws -> Int? {
        let leases = approvals(from: try context.stateStore.state(runLeasesStateKey))
        let now = clock.reading().monotonic
        guard leases.isApproved(item: digest, executable: "run", at: now, window: window),
              let entry = leases.entries.last(where: { $0.item == digest }),
              let elapsed = now.elapsed(since: entry.approvedAt) else { return nil }
        return Int(elapsed.components.seconds)
    }

    /// Starts the lease of `digest`, just approved by a touch.
    static func grantLease(_ digest: String, within window: Duration, context: VaultContext,
                           clock: any PolicyClock) throws {
        try context.stateStore.updateState(runLeasesStateKey) { data in
            var leases = approvals(from: data)
            leases.approve(item: digest, executable: "run", at: clock.reading().monotonic, window: window)
            data = try JSONEncoder().encode(leases)
        }
    }

    /// Who asks, as the door saw it: the process, its parents and its control group.
    struct Asker {
        let process: String
        let ancestry: [ProcessFacts.Ancestor]
        let cgroup: String?
        var chain: [String] { ancestry.map { "pid \($0.pid) " + StoredText.escaped($0.executable) } }

        init(_ caller: Caller) {
            // Escaped: a path or a command name (which a process chooses itself) cannot draw on the terminal.
            process = StoredText.escaped(caller.process)
            let read = { (pid: Int32) in (ProcessFacts.ancestry(above: pid), ProcessFacts.cgroup(of: pid)) }
            let facts = caller.handle.map { $0.whileRunning(read) } ?? read(caller.pid)
            ancestry = facts?.0 ?? []
            cgroup = facts?.1
        }
    }

    /// The digest an approval is bound to: every field of the request and every asking
    /// process (pid, start time, executable; the caller itself is left out, as a new
    /// `touchgate` process asks each time), in a fixed order, as JSON.
    static func approvalDigest(_ request: ApprovalRequest, asker: Asker) -> String {
        struct Bound: Encodable {
            let request: ApprovalRequest
            let askers: [String]
        }
        let bound = Bound(request: request, askers: asker.ancestry.map { "\($0.pid) \($0.startTime) \($0.executable)" })
        let bytes = (try? WireCoding.encoder().encode(bound)) ?? Data()
        return Hex.encode(SHA256.digest(Array(bytes)))
    }

    /// One descriptor for a run's items together: a finger always, and what each item's
    /// policy asks for besides, as a fresh touch (no reuse session approves a command).
    static func approvalDescriptor(for items: [VaultItemInfo], enrollment: EnrollmentStatus) throws -> ItemDescriptor {
        var policy = AccessPolicy.biometryAny
        for info in items {
            let descriptor = try descriptor(of: info)
            if case .invalidated = descriptor.validity(current: enrollment.state) {
                throw ServiceError(.itemInvalidated, "'\(StoredText.escaped(info.name))' was invalidated (the enrolled "
                                   + "fingers changed since it was stored); store it again with touchgate secret add")
            }
            policy = .and(policy, descriptor.policy)
        }
        return ItemDescriptor(name: items.map(\.name).joined(separator: ", "), policy: policy,
                              boundEnrollmentState: enrollment.state, requiresFreshTouch: true)
    }

    /// Runs the decision; what it refuses becomes the refusal a receipt signs.
    static func decide(_ body: () async throws -> String) async -> (match: String?, refusal: ServiceError?) {
        do {
            return (try await body(), nil)
        } catch {
            return (nil, ServiceError.from(error))
        }
    }

    /// The receipt of a decision, signed by the trail's key.
    static func receipt(_ request: ApprovalRequest, digest: String, asker: Asker, user: String,
                        decision: (match: String?, refusal: ServiceError?), audit: AuditLog) -> Receipt {
        let statement = ReceiptStatement(
            decision: decision.refusal == nil ? "approved" : "refused", digest: digest, command: request.command,
            directory: request.directory, secrets: request.secrets.map(\.text), action: request.action,
            argumentsDigest: request.arguments.map { Hex.encode(SHA256.digest(Array($0.utf8))) }, reason: request.reason,
            requester: asker.process, chain: asker.chain, cgroup: asker.cgroup, user: user, match: decision.match,
            refusal: decision.refusal?.message, time: WireCoding.iso8601(Date()))
        let text = String(decoding: (try? WireCoding.encoder().encode(statement)) ?? Data(), as: UTF8.self)
        var receipt = Receipt(statement: text, signature: "", publicKey: Hex.encode(audit.publicKey))
        receipt.signature = Hex.encode(audit.sign(receipt: receipt.signedBytes))
        return receipt
    }

    /// What `touchgate receipt verify` checks, offline: the receipt's signature against
    /// `publicKey` (hex), and that its statement can be read.
    public static func checkReceipt(_ receipt: Receipt, publicKey: String) -> ReceiptCheckReport {
        guard let key = Hex.decode(publicKey), key.count == 32 else {
            return ReceiptCheckReport(valid: false, publicKey: publicKey, statement: nil,
                                      problem: "the public key is not 64 hexadecimal digits")
        }
        guard let signature = Hex.decode(receipt.signature),
              AuditLog.isValidReceipt(signature: signature, of: receipt.signedBytes, publicKey: key) else {
            return ReceiptCheckReport(valid: false, publicKey: publicKey, statement: nil,
                                      problem: receipt.publicKey.lowercased() == publicKey.lowercased()
                                          ? "the signature does not match the statement: the receipt was changed"
                                          : "not signed by this key (the receipt names \(receipt.publicKey.prefix(16))…)")
        }
        guard let statement = receipt.fields else {
            return ReceiptCheckReport(valid: false, publicKey: publicKey, statement: nil,
                                      problem: "the signed statement is not a receipt's")
        }
        return ReceiptCheckReport(valid: true, publicKey: publicKey, statement: statement, problem: nil)
    }
}
