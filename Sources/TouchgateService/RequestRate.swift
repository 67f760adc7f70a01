import Synchronization
public import TouchgateAPI

/// How many requests that may write audit records each user may make in a short time.
///
/// Every refused or granted request writes a record into the user's trail, durably: without
/// a bound, one user looping on refused requests writes hundreds of records a second, fills
/// the disk the daemon shares with every other user, and then nobody can touch anything.
/// A token bucket per user (`Key`: whatever the host tells users apart by): a burst for
/// ordinary bursts of work (a script reading a few secrets), then a steady rate. Requests
/// that read only (status, lists, the trail itself) are never counted, nor are those of a
/// caller the host exempts (root's own).
///
/// Once a user runs out, one record says so (``crossed``), not one per refusal: the next
/// one is written only after the bucket has filled up again.
public final class RequestRate<Key: Hashable & Sendable>: Sendable {
    private struct Tokens {
        var count: Double
        var updated: ContinuousClock.Instant
        var exhausted = false
    }

    /// Whether a request may go ahead, and whether this refusal is the first since the
    /// user's bucket was last full (the one to audit).
    public enum Decision: Equatable, Sendable {
        case allowed
        case refused(first: Bool)
    }

    public let burst: Int
    public let perSecond: Double
    // Each user's tokens, only touched under their lock.
    private let buckets = Mutex<[Key: Tokens]>([:])

    /// A burst of `burst` requests per user, refilled at `perSecond`.
    public init(burst: Int, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }

    /// Takes one request of user `key` for `operation` (`exempt`: not counted at all).
    public func take(_ key: Key, for operation: DaemonOperation, exempt: Bool = false) -> Decision {
        guard !exempt, operation.contract.writesRecords else { return .allowed }
        return buckets.withLock { buckets in
            let now = ContinuousClock.now
            var tokens = buckets[key] ?? Tokens(count: Double(burst), updated: now)
            let elapsed = tokens.updated.duration(to: now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens.count = min(Double(burst), tokens.count + seconds * perSecond)
            tokens.updated = now
            if tokens.count >= Double(burst) { tokens.exhausted = false }
            defer { buckets[key] = tokens }
            if tokens.count >= 1 {
                tokens.count -= 1
                return .allowed
            }
            let first = !tokens.exhausted
            tokens.exhausted = true
            return .refused(first: first)
        }
    }

    /// What the refused user is told.
    public var refusal: ServiceError {
        ServiceError(.limit, "too many requests in a short time (more than \(burst) at once, then \(Self.rate(perSecond))); "
                     + "nothing was done; wait a little and try again")
    }

    private static func rate(_ perSecond: Double) -> String {
        perSecond >= 1 ? "\(Int(perSecond)) a second" : "\(Int((perSecond * 60).rounded())) a minute"
    }
}

