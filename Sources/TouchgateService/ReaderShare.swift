#if canImport(Glibc)
import Glibc
#endif
public import TouchgateAPI

/// Where the user of a request stands with respect to the reader, as systemd-logind tells.
public enum SeatStanding: Sendable, Equatable {
    /// The user of an active local session on a seat (seat0: the screen and keyboard the
    /// reader sits beside): the person at the machine.
    case atSeat
    /// logind knows the seats, and this user has no active local session on any (ssh, cron,
    /// a background service, a user switched away from).
    case elsewhere
    /// logind could not be asked (not on the system bus): nobody is put first.
    case unknown
}

/// libfprint's heat model, mirrored so that the daemon can keep the reader below it.
///
/// libfprint 1.94 (`fpi_device_update_temp`, `fp-device-private.h`) keeps a ratio per
/// device: while an operation runs it rises as `r = 1 - (1 - r)·e^(-t/180)`, while none
/// runs it falls as `r = r·e^(-t/540)`; it starts at 1/(e+1) ≈ 0.269 when the device is
/// made, is WARM from there, and HOT (every operation fails with "too hot") from
/// e/(e+1) ≈ 0.731 until it has cooled to 0.5. From the start, 180 s of operations in a row
/// make it HOT; then about 220 s of idleness make it usable again.
///
/// Time is passed in (`at:`), never read here.
public struct HeatEstimate: Sendable, Equatable {
    /// Where libfprint's model starts, and where it turns WARM: 1/(e+1).
    public static let start = 1 / (M_E + 1)
    /// Where libfprint calls the reader HOT: e/(e+1).
    public static let hot = 1 - start
    /// libfprint's `DEFAULT_TEMP_HOT_SECONDS`: the time constant of heating.
    public static let heatingSeconds = 180.0
    /// libfprint's `DEFAULT_TEMP_COLD_SECONDS`: the time constant of cooling.
    public static let coolingSeconds = 540.0

    private var ratio: Double
    private var updated: ContinuousClock.Instant
    private var active = false

    /// A reader made at `now`, as libfprint starts it.
    public init(at now: ContinuousClock.Instant) {
        ratio = Self.start
        updated = now
    }

    /// The ratio at `now`.
    public func ratio(at now: ContinuousClock.Instant) -> Double {
        let seconds = max(0, Self.seconds(updated.duration(to: now)))
        return active ? 1 - (1 - ratio) * exp(-seconds / Self.heatingSeconds) : ratio * exp(-seconds / Self.coolingSeconds)
    }

    /// The reader is in use (`active`) or idle from `now` on.
    public mutating func set(active: Bool, at now: ContinuousClock.Instant) {
        ratio = ratio(at: now)
        updated = now
        self.active = active
    }

    /// How long the reader may be in use from `now` before the ratio reaches `ceiling` (zero
    /// when it is there already).
    public func useLeft(below ceiling: Double, at now: ContinuousClock.Instant) -> Duration {
        let current = ratio(at: now)
        guard current < ceiling else { return .zero }
        return Self.duration(Self.heatingSeconds * log((1 - current) / (1 - ceiling)))
    }

    /// How long the reader must stay idle from `now` before the ratio is down to `target`.
    public func cooling(downTo target: Double, at now: ContinuousClock.Instant) -> Duration {
        let current = ratio(at: now)
        guard current > target, target > 0 else { return .zero }
        return Self.duration(Self.coolingSeconds * log(current / target))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func duration(_ seconds: Double) -> Duration {
        .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }
}

/// Who gets the reader of touchgated, and for how long: the person at the machine first, and
/// a bounded share for everyone else, so that nobody's unattended requests keep it from the
/// seat's user or heat it until libfprint refuses everyone.
///
/// The rules, each a pure function of what happened and the time passed in:
/// - **The seat's user goes first.** A request of the user of an active local seat
///   session (``SeatStanding/atSeat``) is served before any waiting request of another, and
///   ends the turn of a holder who is ``SeatStanding/elsewhere`` (``preempts(_:holder:)``).
/// - **A share per user for everyone else.** A user who is ``SeatStanding/elsewhere`` holds
///   the reader at most ``Settings/budget`` (20 s) in any ``Settings/window`` (60 s); a turn
///   ends when that runs out, and a request with less than ``Settings/minimumHold`` left is
///   refused at once, saying when to try again.
/// - **Below libfprint's heat model, always.** Every turn ends before the reader's modelled
///   heat (``HeatEstimate``) reaches ``Settings/ceiling`` (0.65, libfprint refuses at
///   0.731); a turn of a user who is elsewhere ends already at ``Settings/elsewhereCeiling``
///   (0.5), so that the seat's user always finds at least a minute of reader time.
/// - **A PAM request fits the module's own wait.** A request that says how long its client
///   waits (`wait-seconds`: the PAM module's `timeout=`) waits in the queue at most
///   ``queueBound(clientWait:)`` and holds the reader at most until the client would give up.
///
/// The arithmetic behind the figures (libfprint's constants as in ``HeatEstimate``):
/// - One user elsewhere, using the whole budget in bursts (20 s on, 40 s off, the pattern
///   that heats most within the window): the ratio settles where one burst brings it back,
///   `r = (1 - a) / (1 - a·b)` with `a = e^(-20/180)`, `b = e^(-40/540)`: 0.62, below 0.731.
/// - Any number of users elsewhere together: their turns end at a ratio of 0.5, which no
///   pattern of theirs passes. From 0.5 the seat's user has `180·ln(0.5/0.35)` = 64 s of
///   reader time before the 0.65 ceiling, and from 0.65 libfprint's HOT is still
///   `180·ln(0.35/0.269)` = 47 s of continuous use away: the margin for what the estimate
///   does not see (the reader's own time to open, a turn ending late under load).
/// - The seat's user alone, never touching: turns of 60 s take the ratio to 0.48, then 0.62,
///   then the ceiling cuts the third; the reader never turns HOT.
public struct ReaderShare: Sendable {
    /// The bounds. The defaults are the figures above.
    public struct Settings: Sendable, Equatable {
        /// The sliding window the budget counts in.
        public var window = Duration.seconds(60)
        /// What a user who is elsewhere may hold the reader within one window.
        public var budget = Duration.seconds(20)
        /// The modelled heat no turn passes.
        public var ceiling = 0.65
        /// The modelled heat no turn of a user who is elsewhere passes.
        public var elsewhereCeiling = 0.5
        /// A turn shorter than this is of no use (nobody finds and touches the reader that
        /// fast): a request that would get less is refused instead.
        public var minimumHold = Duration.seconds(5)

        /// The defaults.
        public init() {}
    }

    /// Whether a request may take the reader now.
    public enum Decision: Sendable, Equatable {
        /// It may, for at most `limit`.
        case grant(limit: Duration)
        /// It may not; the error says why and when to try again.
        case refuse(ServiceError)
    }

    public let settings: Settings
    private var heat: HeatEstimate
    /// Each user's turns that ended within the window, and the turn in progress.
    private var turns: [UInt32: [(start: ContinuousClock.Instant, end: ContinuousClock.Instant)]] = [:]
    private var current: (owner: UInt32, start: ContinuousClock.Instant)?

    /// A share of a reader that is cold at `now`.
    public init(settings: Settings = Settings(), at now: ContinuousClock.Instant) {
        self.settings = settings
        heat = HeatEstimate(at: now)
    }

    /// Whether a request of `owner`, who stands `standing`, may take the reader at `now`, and
    /// for how long.
    public func admit(_ owner: UInt32, standing: SeatStanding, at now: ContinuousClock.Instant) -> Decision {
        let elsewhere = standing == .elsewhere
        let ceiling = elsewhere ? settings.elsewhereCeiling : settings.ceiling
        var limit = heat.useLeft(below: ceiling, at: now)
        if limit < settings.minimumHold {
            // Cooled until a useful turn fits again.
            let target = 1 - (1 - ceiling) * exp(HeatEstimate.seconds(settings.minimumHold * 2) / HeatEstimate.heatingSeconds)
            let wait = heat.cooling(downTo: target, at: now)
            let who = elsewhere ? "for requests from outside a session at this machine's seat" : "for now"
            return .refuse(Self.refusal("the fingerprint reader has been in use so much lately that libfprint would soon "
                                        + "call it too hot, so it is kept cooler \(who)", retryAfter: wait))
        }
        if elsewhere {
            let left = settings.budget - used(by: owner, at: now)
            if left < settings.minimumHold {
                let wait = untilUsed(by: owner, isAtMost: settings.budget - settings.minimumHold, after: now)
                return .refuse(Self.refusal(
                    "you used your share of the fingerprint reader (\(Self.seconds(settings.budget)) s in any "
                    + "\(Self.seconds(settings.window)) s while you have no session at this machine's seat)", retryAfter: wait))
            }
            limit = min(limit, left)
        }
        return .grant(limit: limit)
    }

    /// `owner`'s turn began at `now`.
    public mutating func began(_ owner: UInt32, at now: ContinuousClock.Instant) {
        heat.set(active: true, at: now)
        current = (owner, now)
    }

    /// The turn in progress ended at `now`.
    public mutating func ended(at now: ContinuousClock.Instant) {
        heat.set(active: false, at: now)
        guard let turn = current else { return }
        current = nil
        turns[turn.owner, default: []].append((turn.start, now))
        // Only what the window still sees is kept.
        for (owner, list) in turns {
            let kept = list.filter { $0.end > now - settings.window }
            turns[owner] = kept.isEmpty ? nil : kept
        }
    }

    /// How long `owner` held the reader in the window that ends at `now`.
    public func used(by owner: UInt32, at now: ContinuousClock.Instant) -> Duration {
        let from = now - settings.window
        var total = Duration.zero
        var all = turns[owner] ?? []
        if let current, current.owner == owner { all.append((current.start, now)) }
        for turn in all where turn.end > from {
            total += turn.end - max(turn.start, from)
        }
        return total
    }

    /// The modelled heat at `now` (libfprint's ratio).
    public func heatRatio(at now: ContinuousClock.Instant) -> Double {
        heat.ratio(at: now)
    }

    /// Whether a request standing `arriving` ends the turn of a holder standing `holder`:
    /// only the seat's user's, and only that of someone elsewhere.
    public static func preempts(_ arriving: SeatStanding, holder: SeatStanding) -> Bool {
        arriving == .atSeat && holder == .elsewhere
    }

    /// How long a request whose client gives up after `clientWait` may wait for its turn:
    /// half of it, leaving at least ten seconds to touch the reader, so the daemon refuses
    /// (`limit`, and the PAM module falls back to the password at once) rather than hand the
    /// reader to a client that has left.
    public static func queueBound(clientWait: Duration) -> Duration {
        max(.zero, min(clientWait / 2, clientWait - .seconds(10)))
    }

    /// The wait from `now` until `owner`'s use in the window is at most `bound`.
    private func untilUsed(by owner: UInt32, isAtMost bound: Duration, after now: ContinuousClock.Instant) -> Duration {
        // Use only falls while nothing new is held: a search to the tenth of a second.
        var low = Duration.zero, high = settings.window
        while high - low > .milliseconds(100) {
            let middle = (low + high) / 2
            if usedWithoutNew(by: owner, at: now + middle, heldUntil: now) <= bound { high = middle } else { low = middle }
        }
        return high
    }

    private func usedWithoutNew(by owner: UInt32, at time: ContinuousClock.Instant,
                                heldUntil now: ContinuousClock.Instant) -> Duration {
        let from = time - settings.window
        var total = Duration.zero
        for turn in turns[owner] ?? [] where turn.end > from {
            total += turn.end - max(turn.start, from)
        }
        if let current, current.owner == owner, now > from { total += now - max(current.start, from) }
        return total
    }

    static func refusal(_ what: String, retryAfter wait: Duration) -> ServiceError {
        let seconds = max(1, Int(HeatEstimate.seconds(wait).rounded(.up)))
        return ServiceError(.limit, "\(what), so nothing was asked of the reader; try again in \(seconds) s",
                            retryAfterSeconds: seconds)
    }

    static func seconds(_ duration: Duration) -> Int {
        Int(HeatEstimate.seconds(duration).rounded())
    }
}
