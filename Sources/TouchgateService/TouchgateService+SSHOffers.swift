import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

/// Which of the vault's SSH keys the agents offer: what `ssh-add -d`, `-D` and `-t` ask of
/// an agent, kept by the service in the authenticated state, so every agent of the user
/// offers the same keys, a restarted agent keeps what was withdrawn, and the trail records
/// each change (`ssh.offer`). A door decides none of it.
extension TouchgateService {
    /// Where the offers live in the authenticated state.
    static let sshOffersStateKey = "ssh.offers"

    /// The keys withdrawn, the lifetimes given, and the hops each key may be used over
    /// (`ssh-add -h`), by the key's fingerprint.
    struct SSHOffers: Codable, Equatable {
        var withdrawn: Set<String> = []
        var until: [String: Date] = [:]
        /// Absent in offers kept before destinations were kept (none then).
        var destinations: [String: [SSHDestination]]?

        init() {}

        init(from data: Data?) {
            self = data.flatMap { try? JSONDecoder().decode(SSHOffers.self, from: $0) } ?? SSHOffers()
        }

        /// `reports` as these offers have them at `now`.
        func apply(to reports: [SSHKeyReport], at now: Date) -> [SSHKeyReport] {
            reports.map { report in
                var report = report
                let until = self.until[report.fingerprint]
                let offered = !withdrawn.contains(report.fingerprint) && until.map { now < $0 } != false
                // Offered is what a report says without a word (an older report's absence).
                report.offered = offered ? nil : false
                report.offeredUntil = offered ? until : nil
                return report
            }
        }
    }

    public func sshOffer(_ change: SSHOfferChange) async throws(ServiceError) -> [SSHKeyReport] {
        if let lifetime = change.lifetime, !(1...(10 * 365 * 86_400)).contains(lifetime) {
            throw ServiceError.usage("a key's lifetime is 1 second to 10 years")
        }
        return try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            guard let key = try context.custody.currentKey() else { throw ServiceError.vaultLocked }
            let reports = try Self.keyReports(store, vault: context.vault, key: key)
            let wanted = Set(change.keys)
            let chosen = change.all == true ? reports : reports.filter { wanted.contains($0.publicKey) }
            guard !chosen.isEmpty || change.all == true else {
                throw ServiceError(.notFound, "the vault holds no such SSH key; touchgate ssh list shows the keys it holds")
            }
            // As ssh-agent refuses to remove a key it does not hold.
            if !change.offered, change.all != true, let shown = Self.expiring(chosen, at: context.evaluator.clock.reading().wall).first(where: { !$0.isOffered }) {
                throw ServiceError(.notFound, "the agents do not offer '\(StoredText.escaped(shown.name))' (it was withdrawn, "
                                   + "or its lifetime ran out); nothing to withdraw")
            }
            let now = context.evaluator.clock.reading().wall
            let until = change.lifetime.map { now.addingTimeInterval(TimeInterval($0)) }
            let offers = try context.stateStore.updateState(Self.sshOffersStateKey) { data in
                var offers = SSHOffers(from: data)
                for report in chosen {
                    // An offer is the whole of it, as an add is to ssh-agent: destinations not given
                    // again are gone.
                    if change.offered {
                        offers.withdrawn.remove(report.fingerprint)
                        offers.until[report.fingerprint] = until
                        offers.destinations = (offers.destinations ?? [:]).merging(
                            [report.fingerprint: change.destinations ?? []]) { _, new in new }.filter { !$0.value.isEmpty }
                    } else {
                        offers.withdrawn.insert(report.fingerprint)
                        offers.until[report.fingerprint] = nil
                        offers.destinations?[report.fingerprint] = nil
                    }
                }
                data = try JSONEncoder().encode(offers)
                return offers
            } then: { transaction, _ in
                for report in chosen {
                    let hops = change.destinations.map { " over " + $0.map(\.description).joined(separator: ", ") } ?? ""
                    let what = !change.offered ? "withdrawn from the agents"
                        : "offered to the agents" + (change.lifetime.map { " for \($0) s" } ?? "") + hops
                    try transaction.append(.sshOffer, .success, vaultUser: context.vault.owner, item: report.name,
                                           reason: "SSH key \(report.fingerprint) \(what)")
                }
            }
            return Self.expiring(offers.apply(to: reports, at: .distantPast), at: now)
        }
    }

    public func sshConfirm(_ question: String, interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        // ssh-agent words it on two lines: one line here, anything else escaped.
        let shown = StoredText.escaped(String(question.prefix(300)).split(whereSeparator: \.isNewline).joined(separator: " "))
        try await refuseWithoutStore(device: nil)
        return try await withStore { store in
            try await match(store, ReaderSensor.Candidates(user: principal.loginName, finger: nil), operation: "verify",
                            action: "approve one use of an SSH key an agent asks about (\(shown))", device: nil,
                            interaction: interaction)
        }
    }

    /// The offers kept for this store, read with the listing they change.
    static func sshOffers(_ store: StoreAccess) throws -> SSHOffers {
        SSHOffers(from: try StateStore(log: try store.audit()).state(sshOffersStateKey))
    }
}
