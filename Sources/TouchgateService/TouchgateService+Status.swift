import FingerprintKit
import Foundation
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// Locked or not, the reuse session, lockout, enrolled fingers and readers.
    ///
    /// Reads state only: never asks for a finger or the passphrase, and does not count as
    /// use (it does not delay the idle lock). State that cannot be trusted is reported in
    /// ``StatusReport/problem`` with the command that repairs it, not thrown.
    public func status() async throws(ServiceError) -> StatusReport {
        // No store yet: nothing to report but the readers, and no store is made for asking.
        guard hasStore else {
            let (readers, backend) = await readerReports()
            var report = StatusReport(enrolled: [], readers: readers)
            report.mode = mode.rawValue
            report.trustBoundary = mode.trustBoundary
            report.readerBackend = backend
            return report
        }
        return try await withStore { store in
            let enrolled = try store.printIndex().prints().map(Self.report)
            let (readers, backend) = await readerReports()
            var report = StatusReport(enrolled: enrolled, readers: readers)
            report.mode = mode.rawValue
            report.trustBoundary = mode.trustBoundary
            report.readerBackend = backend
            guard try store.vaultExists() else { return report }
            report.initialized = true
            let context: VaultContext
            do {
                context = try store.vault()
            } catch {
                // A wiped trail: report it with its repair rather than fail the status.
                report.problem = ServiceError.from(error).message
                return report
            }
            report.locked = !context.custody.isHolding
            report.keyExpires = report.locked == false ? context.custody.latestExpiry : nil
            report.items = try context.vault.items().count
            do {
                try context.stateStore.state(VaultPolicyStateStore.stateKey).map { _ in () }
                let policy = try context.evaluator.status()
                let state = try VaultPolicyStateStore(store: context.stateStore).read()
                let remaining = Self.sessionRemaining(state, context.evaluator.configuration,
                                                      now: context.evaluator.clock.monotonicNow)
                report.session = StatusReport.Session(
                    active: remaining != nil, remainingSeconds: remaining.map(Self.seconds),
                    touchReusable: remaining != nil && state.session?.biometry != nil && policy.lockout == nil)
                report.lockout = StatusReport.Lockout(
                    lockedOut: policy.lockout != nil, remainingSeconds: policy.lockout?.remaining.map(Self.seconds),
                    passphraseOnly: policy.lockout?.passphraseOnly ?? false,
                    consecutiveFailures: policy.consecutiveFailures, cumulativeFailures: policy.cumulativeFailures,
                    threshold: context.settings.lockoutThreshold)
                report.passphraseRequired = policy.passphraseRequirement.map(Self.name)
            } catch {
                report.problem = ServiceError.from(error).message
            }
            return report
        }
    }

    /// Whole seconds, rounded up, so that "0 s left" never shows while something is still running.
    static func seconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) + (duration.components.attoseconds > 0 ? 1 : 0)
    }

    /// Time left in the reuse session: the earlier of the idle limit and the session limit
    /// from the latest proof; nil when there is no session.
    static func sessionRemaining(_ state: PolicyState, _ configuration: PolicyConfiguration,
                                 now: MonotonicInstant) -> Duration? {
        guard let session = state.session, let idle = now.elapsed(since: session.lastActivity) else { return nil }
        let sinceProof = [session.biometry?.matchedAt, session.passphraseVerifiedAt]
            .compactMap { $0.flatMap { now.elapsed(since: $0) } }.min()
        guard let sinceProof else { return nil }
        let left = min(configuration.idleTimeout - idle, configuration.sessionTimeout - sinceProof)
        return left > .zero ? left : nil
    }

    static func name(_ requirement: PassphraseRequirement) -> String {
        switch requirement {
        case .notEnteredSinceBoot: "not-entered-since-boot"
        case .expired: "expired"
        case .enrollmentChange: "enrollment-change"
        case .requiredByPolicy: "required-by-policy"
        }
    }
}
