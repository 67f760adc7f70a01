import Foundation

/// How many connections each user may hold open at once.
///
/// Every connection costs the daemon a thread and a receive buffer in locked memory
/// (``FrameBuffer``: the longest line and the longest secret, about 130 KiB). Locked memory
/// is what keeps unlocked vault keys out of swap, and the service grants only so much of it
/// (`LimitMEMLOCK=8M`): without a bound, one user opening idle connections by the hundred
/// would use it all up, and every key unlocked afterwards would sit in memory the kernel may
/// swap out. The bound is per user, so one user's connections never lock others out.
///
/// `@unchecked Sendable`: `open` is only touched under `lock`.
final class ConnectionLimit: @unchecked Sendable {
    /// The default bound: room for several programs of one user at once (a PAM prompt, an
    /// ssh or git helper, commands in a few terminals) while one user's buffers stay near
    /// 2 MiB, a quarter of the locked memory the service unit allows.
    static let defaultPerUser = 16

    let perUser: Int
    private let lock = NSLock()
    private var open: [UInt32: Int] = [:]

    init(perUser: Int = ConnectionLimit.defaultPerUser) {
        self.perUser = perUser
    }

    /// Counts a new connection of `uid`; false (and nothing counted) when that user
    /// already holds ``perUser`` of them.
    func admit(_ uid: UInt32) -> Bool {
        lock.withLock {
            let count = open[uid, default: 0]
            guard count < perUser else { return false }
            open[uid] = count + 1
            return true
        }
    }

    /// Forgets a connection ``admit(_:)`` counted.
    func release(_ uid: UInt32) {
        lock.withLock {
            let count = open[uid, default: 0] - 1
            open[uid] = count > 0 ? count : nil
        }
    }

    /// Connections of `uid` open now.
    func count(of uid: UInt32) -> Int {
        lock.withLock { open[uid, default: 0] }
    }
}
