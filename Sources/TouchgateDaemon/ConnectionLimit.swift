import Synchronization
import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// How many connections touchgated holds open at once: per user, and in all.
///
/// Every connection costs the daemon two threads and a receive buffer in locked memory
/// (``FrameBuffer``: the longest line and the longest secret, about 130 KiB). Locked memory
/// is what keeps unlocked vault keys out of swap, and the service may lock only so much of
/// it (`LimitMEMLOCK`): the total is bounded so that every buffer and every key fits
/// (``init(perUser:total:)``), and each user's share is bounded so that
/// no user takes the others' connections.
///
/// Root's own share is kept inside the total (``rootReserve``): everyone else together is
/// refused once they hold all but that many, so root's own requests (an administrator's
/// command, root's own sudo) are served however many users fill their shares, and still
/// fit in locked memory.
///
/// Connections are counted against the user they serve (``Bucket``), never simply against
/// the uid that opened them: the PAM module runs inside sudo, su, sshd and login as root,
/// and counting all of those as root's would let sixteen sudo prompts of one user take the
/// finger away from every sudo on the machine.
public final class ConnectionLimit: Sendable {
    /// Whose share a connection counts against.
    enum Bucket: Hashable, CustomStringConvertible {
        /// A user's own connections, or a set-user-ID root program that user started (sudo
        /// or su asking for a touch: the process's real uid is still that user's).
        case user(UInt32)
        /// A root process acting for user `uid` (sshd or login running the PAM module for
        /// that user): their share, kept apart from the user's own connections.
        case actingFor(UInt32)
        /// Root's own requests: reserved, never filled by anyone else's PAM prompts.
        case root

        var description: String {
            switch self {
            case .user(let uid): "uid \(uid)"
            case .actingFor(let uid): "root acting for uid \(uid)"
            case .root: "root"
            }
        }
    }

    /// The default share of each user: room for several programs of one user at once (a
    /// PAM prompt, an ssh or git helper, commands in a few terminals).
    public static let defaultPerUser = 16
    /// The default bound on all connections together (lowered to what locked memory allows).
    public static let defaultTotal = 256
    /// Locked memory kept for what is not a connection's buffer: the held vault keys and
    /// secrets on their way through.
    static let reservedLockedBytes = 1 << 20
    /// Locked memory each connection costs: its receive buffer, rounded up to whole pages
    /// plus the guard pages libsodium puts around it.
    static let lockedBytesPerConnection = (FrameBuffer.capacity / 4096 + 1) * 4096 + 3 * 4096

    let perUser: Int
    let total: Int
    /// Connections only root's own requests may take: root's whole share, or half the total
    /// when locked memory allows fewer than two shares.
    let rootReserve: Int
    /// Why ``total`` is lower than asked, when it is (said once, at start).
    let lowered: String?
    // The connections counted, by bucket and in all, only touched under their lock.
    private let counts = Mutex(Counts())

    private struct Counts {
        var open: [Bucket: Int] = [:]
        var all = 0
    }

    /// Bounds of `perUser` per bucket and `total` in all, the total lowered to what this
    /// process may lock (`RLIMIT_MEMLOCK`).
    init(perUser: Int = ConnectionLimit.defaultPerUser, total: Int = ConnectionLimit.defaultTotal) {
        self.perUser = perUser
        let limit = Self.processLockedMemoryLimit()
        let room = limit > UInt64(Self.reservedLockedBytes)
            ? Int(min((limit - UInt64(Self.reservedLockedBytes)) / UInt64(Self.lockedBytesPerConnection), UInt64(Int32.max)))
            : 0
        // Fewer connections rather than buffers the kernel may swap out with secrets in them.
        self.total = room < total ? max(room, 4) : total
        rootReserve = min(perUser, self.total / 2)
        if room < total {
            lowered = "the locked-memory limit (\(limit / 1024) KiB, LimitMEMLOCK) has room for \(room) connections' "
                + "buffers, so at most \(self.total) are served at once (not \(total)), \(rootReserve) of them kept "
                + "for root's own requests"
                + (room < 4 ? "; below 4 the buffers may not all be locked: raise LimitMEMLOCK" : "")
        } else {
            lowered = nil
        }
    }

    /// Counts a new connection in `bucket`; the refusal to send instead (nothing counted)
    /// when the bucket or the daemon is full.
    func admit(_ bucket: Bucket) -> ServiceError? {
        counts.withLock { counts in
            if let refusal = refusal(bucket, counts) { return refusal }
            counts.open[bucket, default: 0] += 1
            counts.all += 1
            return nil
        }
    }

    /// Moves a counted connection from `old` to `new` (a root process whose first request
    /// says which user it acts for); the refusal when `new` is full (it stays counted in `old`).
    func move(from old: Bucket, to new: Bucket) -> ServiceError? {
        guard old != new else { return nil }
        return counts.withLock { counts in
            // Leaving root's share for another's is a new connection of that share: root's
            // reserve never ends up held for other users (sshd running PAM for many of them).
            var without = counts
            without.open[old, default: 0] -= 1
            without.all -= 1
            if let refusal = refusal(new, without) { return refusal }
            counts.open[new, default: 0] += 1
            let count = counts.open[old, default: 0] - 1
            counts.open[old] = count > 0 ? count : nil
            return nil
        }
    }

    /// Forgets a connection counted in `bucket`.
    func release(_ bucket: Bucket) {
        counts.withLock { counts in
            let count = counts.open[bucket, default: 0] - 1
            counts.open[bucket] = count > 0 ? count : nil
            counts.all -= 1
        }
    }

    private func refusal(_ bucket: Bucket, _ counts: Counts) -> ServiceError? {
        if counts.open[bucket, default: 0] >= perUser {
            return ServiceError(.limit, "touchgated already serves \(perUser) connections for \(bucket), the most one "
                                + "user may hold open; end some of your touchgate commands (or the programs holding "
                                + "connections) and try again")
        }
        if counts.all >= total {
            return ServiceError(.limit, "touchgated serves \(total) connections already, the most it holds at once; "
                                + "try again in a moment (an administrator can see who holds them in its log)")
        }
        let others = counts.all - counts.open[.root, default: 0]
        if bucket != .root, others >= total - rootReserve {
            return ServiceError(.limit, "touchgated serves \(others) connections already, the most it holds at once "
                                + "(\(rootReserve) more are kept for root's own requests); try again in a moment "
                                + "(an administrator can see who holds them in its log)")
        }
        return nil
    }

    private static func processLockedMemoryLimit() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0 else { return 0 }
        return limit.rlim_cur == rlim_t.max ? UInt64.max : UInt64(limit.rlim_cur)  // RLIM_INFINITY is all ones
    }
}
