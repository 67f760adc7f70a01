import TouchgateWire

/// One reader operation at a time, served in arrival order; the others wait.
///
/// Before the system sleeps the queue is put to sleep: the running operation is cancelled
/// (its client gets ``sleepError``) and nothing new starts until it wakes again.
actor ReaderQueue {
    /// What a client whose operation was cancelled for sleep is told.
    static let sleepError = ServiceError(.cancelled, "the system is going to sleep, so the fingerprint operation was "
                                             + "cancelled; run the command again once it has woken")

    private var busy = false
    private var asleep = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var running: (serial: UInt64, cancel: @Sendable () -> Void, ended: Task<Void, Never>)?
    private var interrupted: Set<UInt64> = []
    private var serial: UInt64 = 0

    /// Runs `body` once every operation that arrived earlier has ended and the system is awake.
    func one<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        if busy || asleep {
            await withCheckedContinuation { waiting.append($0) }
        }
        busy = true
        defer { handOver() }
        serial += 1
        let mine = serial
        let work = Task { try await body() }
        running = (mine, { work.cancel() }, Task { _ = await work.result })
        let result = await withTaskCancellationHandler {
            await work.result
        } onCancel: {
            work.cancel()
        }
        running = nil
        if interrupted.remove(mine) != nil, case .failure = result { throw Self.sleepError }
        return try result.get()
    }

    /// The system is about to sleep: holds back new operations, cancels the running one
    /// and returns a task that ends when it has ended (nil when none ran).
    func sleep() -> Task<Void, Never>? {
        asleep = true
        guard let running else { return nil }
        interrupted.insert(running.serial)
        running.cancel()
        return running.ended
    }

    /// The system woke: operations held back start again, in arrival order.
    func wake() {
        asleep = false
        if !busy, !waiting.isEmpty {
            busy = true
            waiting.removeFirst().resume()
        }
    }

    private func handOver() {
        if asleep || waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
