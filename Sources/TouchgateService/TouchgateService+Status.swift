import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// What this service protects against, as `status` says it.
    var trustBoundary: String { hostedByAgent ? ServiceMode.agentTrustBoundary : mode.trustBoundary }

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
            report.trustBoundary = trustBoundary
            report.readerBackend = backend
            return report
        }
        return try await withStore { store in
            let snapshot = try store.snapshot("status") { try StatusSnapshot(store) }
            let (readers, backend) = await readerReports()
            var report = StatusReport(enrolled: snapshot.enrolled, readers: readers)
            report.mode = mode.rawValue
            report.trustBoundary = trustBoundary
            report.readerBackend = backend
            guard snapshot.initialized else { return report }
            report.initialized = true
            guard let vault = snapshot.vault else {
                // A wiped trail: report it with its repair rather than fail the status.
                report.problem = snapshot.problem
                return report
            }
            let custody = store.custody(vault)
            report.locked = !custody.isHolding
            report.keyExpires = report.locked == false ? custody.latestExpiry : nil
            report.items = snapshot.items
            if try vault.isBoundToTPM() {
                report.tpm = try TPMStatusReport(vault.tpmStatus(device: .configured, log: store.audit())).summary
            }
            guard let state = snapshot.state, let settings = snapshot.settings else {
                report.problem = snapshot.problem
                return report
            }
            let now = store.clock.monotonicNow
            let configuration = settings.configurationOrDefaults
            let policy: PolicyStatus
            if let unchanged = AccessEvaluator.status(of: state, at: now, configuration: configuration) {
                policy = unchanged
            } else {
                // Time changed the state (a lockout over, a session ended): the evaluator
                // applies and records that, as any decision would.
                do {
                    policy = try store.vault().evaluator.status()
                } catch {
                    report.problem = ServiceError.from(error).message
                    return report
                }
            }
            let remaining = Self.sessionRemaining(state, configuration, now: now)
            report.session = StatusReport.Session(
                active: remaining != nil, remainingSeconds: remaining.map(Self.seconds),
                touchReusable: remaining != nil && state.session?.biometry != nil && policy.lockout == nil)
            report.lockout = StatusReport.Lockout(
                lockedOut: policy.lockout != nil, remainingSeconds: policy.lockout?.remaining.map(Self.seconds),
                passphraseOnly: policy.lockout?.passphraseOnly ?? false,
                consecutiveFailures: policy.consecutiveFailures, cumulativeFailures: policy.cumulativeFailures,
                threshold: settings.lockoutThreshold)
            report.passphraseRequired = policy.passphraseRequirement.map(Self.name)
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

/// What `status` reads from the store, before time and the custody are applied: kept by
/// touchgated until the store changes (``StoreAccess/snapshot(_:_:)``).
struct StatusSnapshot: Sendable {
    var enrolled: [PrintReport] = []
    var initialized = false
    /// The vault, when it opened with its audit log (for the custody of its key).
    var vault: Vault?
    var items = 0
    /// The verified policy state and the settings in force; nil with ``problem`` when the
    /// state does not check out.
    var state: PolicyState?
    var settings: PolicySettings?
    /// Why the vault or its state could not be read, with the command that repairs it.
    var problem: String?

    init(_ store: StoreAccess) throws {
        enrolled = try store.printIndex().prints().map(TouchgateService.report)
        guard try store.vaultExists() else { return }
        initialized = true
        let context: VaultContext
        do {
            context = try store.vault()
        } catch {
            problem = ServiceError.from(error).message
            return
        }
        vault = context.vault
        items = try context.vault.items().count
        do {
            // Verified against the audit head: edited or swapped-back state is a problem here.
            state = try VaultPolicyStateStore(store: context.stateStore).read()
            settings = context.settings
        } catch {
            problem = ServiceError.from(error).message
        }
    }
}
