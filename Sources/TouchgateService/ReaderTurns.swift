import FoundationEssentials
import Synchronization
public import TouchgateAPI

/// Whose turn it is at the readers of a long-lived process (touchgated): one request at a
/// time holds them, and only while it uses a reader.
///
/// A request takes its turn when it first opens a reader (``ReaderPool/take(device:)``) and
/// gives it back when it closes it, so everything else it does (asking a question, reading
/// the store, releasing an item inside the reuse window or by passphrase) never waits for
/// the reader, and no one waits behind it meanwhile.
///
/// Who gets the next turn, and for how long, is ``ReaderShare``'s rule: a request of the
/// user at the machine's seat goes first and ends the turn of a user who is elsewhere
/// (the holder is told why, ``preempted``); among the rest the next turn goes to the waiting
/// user served least recently, so one user's queue of requests cannot starve another's
/// single touch. Every turn is granted for a limit (the user's share, the reader's heat, the
/// client's own wait) and ended when it passes. A request whose client said how long it
/// waits (the PAM module) waits in the queue at most ``ReaderShare/queueBound(clientWait:)``.
///
/// Before the system sleeps, the holder's request is cancelled (its client is told why,
/// ``sleepError``) and no turn is given until it wakes.
public actor ReaderTurns {
    /// What a client whose request was cancelled for sleep is told.
    public static let sleepError = ServiceError(.cancelled, "the system is going to sleep, so the fingerprint operation "
                                                + "was cancelled; run the command again once it has woken")

    /// What a client is told whose turn was ended for the user at the machine's seat.
    public static let preempted = ServiceError(.limit, "the person at this machine's seat needs the fingerprint reader, "
                                               + "so this request's wait for a finger was ended (a request from outside "
                                               + "a session at the seat gives way to theirs); run it again from a "
                                               + "session at the machine, or later", retryAfterSeconds: 10)

    /// The request the current task serves, in a process that gives turns (touchgated).
    @TaskLocal public static var request: Request?

    /// One request, as the turns see it: whose it is, how long its client waits, and how to cancel it.
    public final class Request: Sendable {
        /// The user it is for: turns are fair across these.
        public let owner: UInt32
        /// How long its client waits for the answer (the PAM module's `timeout=`), when it said.
        public let clientWait: Duration?
        /// When it arrived.
        let arrived = ContinuousClock.now
        // How to cancel it and why it was, only touched under their lock.
        private let state = Mutex<(cancelHook: (@Sendable () -> Void)?, interruption: ServiceError?)>((nil, nil))

        /// A request for `owner`, whose client waits at most `clientWait` (nil: unsaid).
        public init(owner: UInt32, clientWait: Duration? = nil) {
            self.owner = owner
            self.clientWait = clientWait
        }

        /// How to cancel the request (its task's `cancel`), set once the task exists.
        public func onCancel(_ hook: @escaping @Sendable () -> Void) {
            state.withLock { $0.cancelHook = hook }
        }

        /// Why its turn was ended under it (sleep, the seat's user, its share spent), if it was:
        /// what its client is told instead of a bare cancellation.
        public var interruption: ServiceError? { state.withLock { $0.interruption } }

        /// Whether it was cancelled because the system went to sleep.
        public var wasInterruptedForSleep: Bool { interruption == ReaderTurns.sleepError }

        func interrupt(_ why: ServiceError) {
            let hook: (@Sendable () -> Void)? = state.withLock { state in
                if state.interruption == nil { state.interruption = why }
                return state.cancelHook
            }
            hook?()
        }
    }

    private struct Waiting {
        let ticket: UInt64
        let owner: UInt32
        let standing: SeatStanding
        let request: Request?
        let continuation: CheckedContinuation<Duration, any Error>
    }

    private struct Holding {
        var request: Request?
        var owner: UInt32
        var standing: SeatStanding
        var depth: Int
        var ended: [CheckedContinuation<Void, Never>]
        var grant: UInt64
        /// Ends the turn when its limit passes; cancelled when the turn is given back first.
        var timer: Task<Void, Never>? = nil
    }

    private var holder: Holding?
    private var waiting: [Waiting] = []
    private var asleep = false
    private var tickets: UInt64 = 0
    /// When each user last got a turn (a counter, not a clock).
    private var lastServed: [UInt32: UInt64] = [:]
    private var turnsGiven: UInt64 = 0
    private var share: ReaderShare
    private let standings: SeatStandings?

    /// Turns for a process whose users stand as `standings` says (nil: nobody is put first,
    /// as for touchgate agent, which serves one user), shared by `share`'s bounds.
    public init(standings: SeatStandings? = nil, share: ReaderShare.Settings = ReaderShare.Settings()) {
        self.standings = standings
        self.share = ReaderShare(settings: share, at: .now)
    }

    /// Waits for the turn of the current task's request (or of an anonymous one). A
    /// request that holds the turn already gets it again at once (nested use).
    /// - Throws: `CancellationError` when the task is cancelled while waiting; ``ServiceError``
    ///   (`limit`) when the request's share, the reader's heat or its client's wait leaves no turn.
    func acquire() async throws {
        let request = Self.request
        if let held = holder, let request, held.request === request {
            holder?.depth += 1
            return
        }
        let owner = request?.owner ?? 0
        let standing = await standings?.standing(of: owner) ?? .unknown
        // Refused at once when no turn could be given now, rather than after a wait.
        if case .refuse(let error) = share.admit(owner, standing: standing, at: .now) { throw error }
        if holder == nil, !asleep, waiting.isEmpty {
            let limit = try admitted(owner, standing: standing, request: request)
            grant(request, owner: owner, standing: standing, limit: limit)
            return
        }
        if let held = holder, ReaderShare.preempts(standing, holder: held.standing), let holding = held.request {
            holding.interrupt(Self.preempted)
        }
        tickets += 1
        let ticket = tickets
        if let wait = request?.clientWait {
            let bound = ReaderShare.queueBound(clientWait: wait)
            Task { [weak self] in
                try? await Task.sleep(for: bound)
                await self?.abandon(ticket, with: Self.queueTooLong(wait))
            }
        }
        let limit = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Duration, any Error>) in
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                waiting.append(Waiting(ticket: ticket, owner: owner, standing: standing, request: request,
                                       continuation: continuation))
            }
        } onCancel: {
            Task { await self.abandon(ticket, with: CancellationError()) }
        }
        grant(request, owner: owner, standing: standing, limit: limit)
    }

    /// Gives back a turn ``acquire()`` gave.
    func release() {
        guard var held = holder else { return }
        held.depth -= 1
        if held.depth > 0 {
            holder = held
            return
        }
        holder = nil
        held.timer?.cancel()
        share.ended(at: .now)
        for continuation in held.ended { continuation.resume() }
        handOver()
    }

    /// The system is about to sleep: no turn is given until ``wake()`` and the holder's
    /// request is cancelled. Returns a task that ends once it has given the turn back (nil
    /// when no request held it).
    public func sleep() -> Task<Void, Never>? {
        asleep = true
        guard let held = holder else { return nil }
        held.request?.interrupt(Self.sleepError)
        return Task { await self.turnGivenBack() }
    }

    private func turnGivenBack() async {
        guard holder != nil else { return }
        await withCheckedContinuation { continuation in holder?.ended.append(continuation) }
    }

    /// The system woke: turns are given again.
    public func wake() {
        asleep = false
        if holder == nil { handOver() }
    }

    /// The limit of a turn for `owner` now, within the share and its client's wait; throws the refusal.
    private func admitted(_ owner: UInt32, standing: SeatStanding, request: Request?) throws -> Duration {
        switch share.admit(owner, standing: standing, at: .now) {
        case .refuse(let error):
            throw error
        case .grant(var limit):
            if let request, let wait = request.clientWait {
                // Never held for a client that has given up: a second after it would have (its
                // own timeout speaks first, and its leaving cancels the request anyway).
                let left = wait - request.arrived.duration(to: .now) + .seconds(1)
                limit = min(limit, max(left, .seconds(1)))
            }
            return limit
        }
    }

    private func grant(_ request: Request?, owner: UInt32, standing: SeatStanding, limit: Duration) {
        // A woken request takes over the place ``handOver()`` kept for it, with whoever waits for its end.
        turnsGiven += 1
        holder = Holding(request: request, owner: owner, standing: standing, depth: 1, ended: holder?.ended ?? [],
                         grant: turnsGiven)
        lastServed[owner] = turnsGiven
        share.began(owner, at: .now)
        let grant = turnsGiven
        // The seat's user arrived between this request's wake and now: it gives way at once.
        if standing == .elsewhere, waiting.contains(where: { $0.standing == .atSeat }) { request?.interrupt(Self.preempted) }
        holder?.timer = Task { [weak self] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            await self?.expire(grant, after: limit)
        }
    }

    /// Ends turn `grant` if it still holds the reader: its limit passed.
    private func expire(_ grant: UInt64, after limit: Duration) {
        guard let held = holder, held.grant == grant, let request = held.request else { return }
        let seconds = ReaderShare.seconds(limit)
        request.interrupt(ServiceError(.timedOut, "no finger on the reader within \(seconds) s, the most this request "
                                       + "could hold it now (each user's share, the reader's heat and the client's own "
                                       + "wait bound it; a reader kept waiting overheats and refuses everyone), so the "
                                       + "wait was ended; run the command again and touch the reader when asked"))
    }

    /// Wakes the waiting request that goes next: one of the seat's user first, then the user
    /// served least recently (earliest arrival first among equals). A request its share or
    /// its client's wait leaves no turn is refused instead, and the next one considered.
    private func handOver() {
        while !asleep, holder == nil, !waiting.isEmpty {
            var best = 0
            for index in waiting.indices.dropFirst() {
                let candidate = waiting[index], current = waiting[best]
                if (candidate.standing == .atSeat) != (current.standing == .atSeat) {
                    if candidate.standing == .atSeat { best = index }
                    continue
                }
                if lastServed[candidate.owner] ?? 0 < lastServed[current.owner] ?? 0 { best = index }
            }
            let next = waiting.remove(at: best)
            do {
                let limit = try admitted(next.owner, standing: next.standing, request: next.request)
                // Held at once, so no one else is granted before the woken task runs.
                holder = Holding(request: nil, owner: next.owner, standing: next.standing, depth: 1, ended: [], grant: 0)
                next.continuation.resume(returning: limit)
            } catch {
                next.continuation.resume(throwing: error)
            }
        }
    }

    private func abandon(_ ticket: UInt64, with error: any Error) {
        guard let index = waiting.firstIndex(where: { $0.ticket == ticket }) else { return }
        waiting.remove(at: index).continuation.resume(throwing: error)
    }

    /// What a request is told whose client would give up before its turn could come.
    static func queueTooLong(_ wait: Duration) -> ServiceError {
        ServiceError(.limit, "the fingerprint reader is in use by another request, and this one's client waits only "
                     + "\(ReaderShare.seconds(wait)) s in all, too little to wait for it and still touch the reader; "
                     + "nothing was asked of the reader: use the password, or try again in a moment",
                     retryAfterSeconds: 5)
    }
}
