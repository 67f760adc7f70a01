import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

// The use cases that take another path while fprintd owns the reader: verify, identify and
// item authorization go through fprintd (``FprintdSensor``) against the fingers enrolled
// there, under the same policy core: lockout, counting, audit and reuse work unchanged.
extension TouchgateService {
    /// verify/identify through fprintd: one authentication attempt for `user`, optionally
    /// one finger. fprintd matches one user at a time, so identify checks the principal.
    func fprintdMatch(_ store: StoreAccess, target: FprintdTarget, user: String, finger: String?, operation: String,
                      action: String, guardsKeyMaterial: Bool = false, interaction: any Interaction) async throws -> MatchReport {
        let guarded = try store.policyGuard(vaultUser: try store.vaultExists() ? principal.loginName : nil)
        try guarded.requireIntactState()
        let (enrollment, fingers) = try await EnrollmentTracker.fprintdStatus(guarded, target: target, user: user)
        if let finger, let wanted = Finger(name: finger)?.fprintdName, !fingers.isEmpty, !fingers.contains(wanted) {
            throw ServiceError.nothingEnrolled("\(finger) of \(StoredText.escaped(user)) is not enrolled in fprintd "
                                               + "(it has: \(fingers.joined(separator: ", "))); enroll it with: "
                                               + "fprintd-enroll -f \(wanted)")
        }
        let sensor = FprintdSensor(target: target, user: user, finger: finger, interaction: interaction,
                                   operation: operation)
        do {
            let grant = try await guarded.evaluator.authenticate(action: action, enrollment: enrollment, sensor: sensor,
                                                                 guardsKeyMaterial: guardsKeyMaterial)
            var matched: String?
            if let id = grant.matchedPrint { matched = await sensor.finger(of: id) }
            await sensor.close()
            return MatchReport(match: true, user: user, finger: matched ?? finger)
        } catch {
            await sensor.close()
            if case .authenticationFailed(.noMatch(let left)) = error {
                return MatchReport(match: false, user: user, finger: nil, attemptsLeft: left)
            }
            throw await Self.fprintdExplained(error, sensor: sensor, user: user)
        }
    }

    /// Item authorization through fprintd; see ``authorize(_:_:context:key:device:interaction:purpose:)``.
    func fprintdAuthorize(_ item: ItemDescriptor, _ operation: ItemOperation, context: VaultContext,
                          target: FprintdTarget, interaction: any Interaction, purpose: String?) async throws -> Grant {
        let user = context.vault.owner
        let (enrollment, _) = try await EnrollmentTracker.fprintdStatus(context.guarded, target: target, user: user)
        let sensor = FprintdSensor(target: target, user: user, finger: nil, interaction: interaction,
                                   operation: "authorize")
        let verifier = context.verifier(interaction)
        let grant: Grant
        do {
            grant = try await context.evaluator.authorize(item: item, operation: operation, enrollment: enrollment,
                                                          sensor: sensor, passphrase: verifier, purpose: purpose)
        } catch {
            await sensor.close()
            throw verifier.explain(await Self.fprintdExplained(error, sensor: sensor, user: user))
        }
        await sensor.close()
        return grant
    }

    /// The enrolled set `biometry-current-set` binds a new item to: fprintd's, while fprintd
    /// owns the reader, else Touchgate's own prints.
    func currentEnrollment(_ context: VaultContext, device: String?) async throws -> EnrollmentStatus {
        try await withBackend(device: device) { backend in
            switch backend {
            case .libfprint:
                return try EnrollmentTracker.status(context.guarded)
            case .fprintd(let target):
                let (status, _) = try await EnrollmentTracker.fprintdStatus(context.guarded, target: target,
                                                                           user: context.vault.owner)
                guard status.printCount > 0 else {
                    throw ServiceError.nothingEnrolled("biometry-current-set binds the item to the fingers enrolled in "
                                                       + "fprintd, and none is; enroll one with: fprintd-enroll")
                }
                return status
            }
        }
    }

    /// Refuses an enroll or delete of prints while fprintd owns the reader.
    func refuseWhileFprintdOwnsTheReader(device: String?, _ action: String) async throws {
        let backend = try await resolveBackend(device: device)
        await backend.close()
        if case .fprintd = backend { throw Self.managedByFprintd(action) }
    }

    /// The reader error behind an "unavailable", and fprintd's wording for "nothing enrolled".
    private static func fprintdExplained(_ error: AuthorizationError, sensor: FprintdSensor, user: String) async -> any Error {
        if error == .readerUnavailable, let cause = await sensor.lastFailure { return cause }
        if error == .nothingEnrolled {
            return ServiceError.nothingEnrolled("no finger of \(StoredText.escaped(user)) is enrolled in fprintd; enroll "
                                                + "one with: fprintd-enroll -f right-index-finger (or in your desktop's "
                                                + "fingerprint settings)")
        }
        return error
    }
}
