import FingerprintKit
public import Logging
import Synchronization

/// Where each user stands with respect to the reader (``SeatStanding``), from systemd-logind:
/// the users of active local sessions on a seat are at it, everyone else is elsewhere; when
/// nobody is at any seat, or logind cannot be asked, nobody is put first (``SeatStanding/unknown``).
///
/// Asked of logind at most once a second (the answer is kept that long), so a loop of
/// requests does not become a loop of bus calls; a user who just switched to their session
/// is at the seat a second later.
public final class SeatStandings: Sendable {
    /// The uids at a seat now; throws when logind cannot tell.
    package typealias Lookup = @Sendable () async throws -> Set<UInt32>

    private let lookup: Lookup
    private let logger: Logger
    // The last answer (nil: logind could not tell) and when it was had, only touched under their lock.
    private let last = Mutex<(users: Set<UInt32>?, at: ContinuousClock.Instant)?>(nil)
    /// How long an answer is kept.
    static let kept = Duration.seconds(1)

    /// Standings from systemd-logind on the system bus (`DBUS_SYSTEM_BUS_ADDRESS` when set).
    public convenience init(logger: Logger) {
        self.init(logger: logger) { try await Self.askLogind { try await $0.activeSeatUsers() } }
    }

    /// The uids with a session at a seat now, in its foreground or not (logind on the system
    /// bus, `DBUS_SYSTEM_BUS_ADDRESS` when set): whose passkey devices touchgated keeps.
    public static func seatUsers() async throws -> Set<UInt32> {
        try await askLogind { try await $0.seatUsers() }
    }

    /// `question` asked of logind over a connection of its own, closed afterwards.
    private static func askLogind<T>(_ question: (LogindClient) async throws -> T) async throws -> T {
        let logind = try await LogindClient.connect()
        do {
            let answer = try await question(logind)
            await logind.close()
            return answer
        } catch {
            await logind.close()
            throw error
        }
    }

    /// Standings from `lookup` (a test's seats).
    package init(logger: Logger, lookup: @escaping Lookup) {
        self.logger = logger
        self.lookup = lookup
    }

    /// Where `uid` stands now.
    public func standing(of uid: UInt32) async -> SeatStanding {
        let now = ContinuousClock.now
        let users: Set<UInt32>?
        if let kept = last.withLock({ $0 }), kept.at.duration(to: now) < Self.kept {
            users = kept.users
        } else {
            do {
                users = try await lookup()
            } catch {
                if last.withLock({ $0?.users != nil || $0 == nil }) {
                    logger.notice("systemd-logind cannot say who is at this machine's seat (\(error)); nobody's requests for the reader are put first")
                }
                users = nil
            }
            last.withLock { $0 = (users, now) }
        }
        // Nobody at any seat (a server, a screen switched to the greeter): nobody to put first.
        guard let users, !users.isEmpty else { return .unknown }
        return users.contains(uid) ? .atSeat : .elsewhere
    }
}
