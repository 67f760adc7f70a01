import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// Checks a finger against the enrolled prints of `user` (default: the principal),
    /// optionally one finger only.
    ///
    /// An authentication attempt like any other: refused during a lockout without opening
    /// the reader, a genuine no-match counted toward the lockout, every attempt audited.
    /// It releases nothing and starts no reuse session. A no-match is an answer, not an
    /// error: the report says `match: false` and how many attempts are left.
    public func verify(user: String? = nil, finger: String? = nil, device: String? = nil,
                       interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await refuseWithoutStore(device: device)
        return try await withStore { store in
            let finger = try finger.map { name in
                guard let canonical = Vocabulary.finger(name) else {
                    throw ServiceError.usage("unknown finger '\(StoredText.escaped(name))'; use a name like right-index")
                }
                return canonical
            }
            let user = user ?? principal.loginName
            let who = "\(finger ?? "a finger") of \(user)"
            return try await match(store, ReaderSensor.Candidates(user: user, finger: finger), operation: "verify",
                                   action: "verify \(who)", device: device, interaction: interaction)
        }
    }

    public func verifyUnused(secondsAfter: Int) async throws(ServiceError) {
        guard (0...86_400).contains(secondsAfter) else {
            throw ServiceError.usage("seconds-after is 0 to 86400, the time from the match to the end of the prompt")
        }
        try await withExistingStore(orElse: ServiceError(.notFound, "no store: no match of this user to record")) { store in
            _ = try store.audit().append(.authAttempt, .failure, vaultUser: principal.loginName,
                                         reason: "a fingerprint match was not used: the password prompt ended \(secondsAfter) s "
                                             + "after it (pam_touchgate mode=either), so nobody was authenticated by it")
        }
    }

    /// Finds which enrolled user and finger is on the reader; counted and audited like verify.
    public func identify(device: String? = nil, interaction: any Interaction) async throws(ServiceError) -> MatchReport {
        try await refuseWithoutStore(device: device)
        return try await withStore { store in
            try await match(store, ReaderSensor.Candidates(), operation: "identify", action: "identify a finger",
                            device: device, interaction: interaction)
        }
    }

    /// Refuses a touch for a principal who has no store when the reader is reached directly:
    /// their prints could only be in that store, and making one for the refusal would leave
    /// a store behind for every user a PAM stack asks about. Through fprintd the prints are
    /// fprintd's, and the store (lockout, audit) is made as usual.
    func refuseWithoutStore(device: String?) async throws(ServiceError) {
        guard !hasStore else { return }
        let direct = try await serviceErrors {
            try await withBackend(device: device) { if case .libfprint = $0 { true } else { false } }
        }
        if direct {
            throw .nothingEnrolled("no finger is enrolled for \(principal.loginName); enroll one: "
                                   + "touchgate enroll --finger right-index")
        }
    }

    /// One authentication attempt through the policy core, against `candidates`; with
    /// `guardsKeyMaterial`, one whose match lets the vault use a key afterwards (a passkey's
    /// verification), so the passphrase must be fresh as for a release.
    func match(_ store: StoreAccess, _ candidates: ReaderSensor.Candidates, operation: String, action: String,
               device: String?, guardsKeyMaterial: Bool = false, interaction: any Interaction) async throws -> MatchReport {
        if case .fprintd(let target) = try await resolveBackend(device: device) {
            return try await target.closing { target in
                try await fprintdMatch(store, target: target, user: candidates.user ?? principal.loginName,
                                       finger: candidates.finger, operation: operation, action: action,
                                       guardsKeyMaterial: guardsKeyMaterial, interaction: interaction)
            }
        }
        // The vault, its audit log and settings opened once for the whole decision.
        let vault = try store.vaultIfPresent()
        let guarded = try vault?.guarded ?? store.policyGuard(vaultUser: nil)
        try guarded.requireIntactState()
        let prints = try vault.map { try $0.printStore(key: $0.requireKey()) } ?? store.printStore()
        let enrollment = try EnrollmentTracker.status(guarded)
        let sensor = ReaderSensor(device: device, readers: readers, interaction: interaction, prints: { prints },
                                  candidates: candidates, operation: operation) { handle in
            // What an interrupted enrollment left on a reader with storage goes before the touch.
            if let session = handle.session, session.info.features.contains(.storage) {
                _ = try? await Self.reconcile(session, store: store)
            }
        }
        do {
            let grant = try await guarded.evaluator.authenticate(action: action, enrollment: enrollment, sensor: sensor,
                                                                 guardsKeyMaterial: guardsKeyMaterial)
            let matched = await grant.matchedPrint.asyncMap { await sensor.stored($0) } ?? nil
            await sensor.close()
            return MatchReport(match: true, user: matched?.user, finger: matched?.finger)
        } catch {
            await sensor.close()
            if case .authenticationFailed(.noMatch(let left)) = error {
                return MatchReport(match: false, user: candidates.user, finger: nil, attemptsLeft: left)
            }
            if error == .readerUnavailable, let cause = await sensor.lastFailure { throw cause }
            throw error
        }
    }
}

extension Optional where Wrapped: Sendable {
    /// `map` with an async transform.
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async -> T) async -> T? {
        guard let value = self else { return nil }
        return await transform(value)
    }
}
