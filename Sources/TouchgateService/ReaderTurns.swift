import FoundationEssentials
import Synchronization
public import TouchgateAPI

/// Whose turn it is at the readers of a long-lived process (touchgated): one request at a
/// time holds them, and only while it uses a reader.
///
/// A request takes its turn when it first opens a reader (``ReaderPool/take(device:)``) and
/// gives it back when it closes it, so everything else it does (asking a question, reading
/// the store, releasing an item inside the reuse window or by passphrase) never waits for
/// the reader, and no one waits behind it meanwhile. Turns are fair across users: the next
/// turn goes to the waiting user served least recently, so one user's queue of requests
/// cannot starve another's single touch.
///
/// Before the system sleeps, the holder's request is cancelled (its client is told why,
/// ``sleepError``) and no turn is given until it wakes.
public actor ReaderTurns {
    /// What a client whose request was cancelled for sleep is told.
    public static let sleepError = ServiceError(.cancelled, "the system is going to sleep, so the fingerprint operation "
                                                + "was cancelled; run the command again once it has woken")

    /// The request the current task serves, in a process that gives turns (touchgated).
    @TaskLocal public static var request: Request?

    /// One request, as the turns see it: whose it is, and how to cancel it.
    public final class Request: Sendable {
        /// The user it is for: turns are fair across these.
        public let owner: UInt32
        // How to cancel it and whether sleep did, only touched under their lock.
        private let state = Mutex<(cancelHook: (@Sendable () -> Void)?, interrupted: Bool)>((nil, false))

        /// A request for `owner`.
        public init(owner: UInt32) {
            self.owner = owner
        }

        /// How to cancel the request (its task's `cancel`), set once the task exists.
        public func onCancel(_ hook: @escaping @Sendable () -> Void) {
            state.withLock { $0.cancelHook = hook }
        }

        /// Whether it was cancelled because the system went to sleep.
        public var wasInterruptedForSleep: Bool { state.withLock { $0.interrupted } }

        func interruptForSleep() {
            let hook: (@Sendable () -> Void)? = state.withLock { state in
                state.interrupted = true
                return state.cancelHook
            }
            hook?()
        }
    }

    private struct Waiting {
        let ticket: UInt64
        let owner: UInt32
        let continuation: CheckedContinuation<Void, any Error>
    }

    private var holder: (request: Request?, depth: Int, ended: [CheckedContinuation<Void, Never>])?
    private var waiting: [Waiting] = []
    private var asleep = false
    private var tickets: UInt64 = 0
    /// When each user last got a turn (a counter, not a clock).
    private var lastServed: [UInt32: UInt64] = [:]
    private var turnsGiven: UInt64 = 0

    public init() {}

    /// Waits for the turn of the current task's request (or of an anonymous one). A
    /// request that holds the turn already gets it again at once (nested use).
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    func acquire() async throws {
        let request = Self.request
        if let held = holder, let request, held.request === request {
            holder?.depth += 1
            return
        }
        let owner = request?.owner ?? 0
        if holder == nil, !asleep, waiting.isEmpty {
            grant(request, owner: owner)
            return
        }
        tickets += 1
        let ticket = tickets
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                waiting.append(Waiting(ticket: ticket, owner: owner, continuation: continuation))
            }
        } onCancel: {
            Task { await self.abandon(ticket) }
        }
        grant(request, owner: owner)
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
        for continuation in held.ended { continuation.resume() }
        handOver()
    }

    /// The system is about to sleep: no turn is given until ``wake()`` and the holder's
    /// request is cancelled. Returns a task that ends once it has given the turn back (nil
    /// when no request held it).
    public func sleep() -> Task<Void, Never>? {
        asleep = true
        guard let held = holder else { return nil }
        held.request?.interruptForSleep()
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

    private func grant(_ request: Request?, owner: UInt32) {
        // A woken request takes over the place ``handOver()`` kept for it, with whoever waits for its end.
        holder = (request, 1, holder?.ended ?? [])
        turnsGiven += 1
        lastServed[owner] = turnsGiven
    }

    /// Wakes the waiting request of the user served least recently (earliest arrival first
    /// among equals); the woken request sets itself as holder.
    private func handOver() {
        guard !asleep, holder == nil, !waiting.isEmpty else { return }
        var best = 0
        for index in waiting.indices.dropFirst() {
            let candidate = lastServed[waiting[index].owner] ?? 0
            let current = lastServed[waiting[best].owner] ?? 0
            if candidate < current { best = index }
        }
        let next = waiting.remove(at: best)
        // Held at once, so no one else is granted before the woken task runs.
        holder = (nil, 1, [])
        next.continuation.resume()
    }

    private func abandon(_ ticket: UInt64) {
        guard let index = waiting.firstIndex(where: { $0.ticket == ticket }) else { return }
        waiting.remove(at: index).continuation.resume(throwing: CancellationError())
    }
}
