import FingerprintKit
import Synchronization
import TouchgateAPI

/// How long a reader operation waits for a finger before it gives up.
///
/// A reader asked to scan and never touched keeps its sensor powered: libfprint's heat
/// model calls a reader hot after about three minutes of that and then refuses every
/// operation for minutes more, for every user. One unattended `touchgate verify` could do
/// that on purpose. So each wait ends well inside that model: when the reader reports
/// nothing (no finger, no scan, no stage) for ``timeout``, the operation is cancelled and
/// ends with `timed-out`. Every event of the reader starts the wait anew, so a slow
/// enrollment of many scans is not cut short; while the reader says a finger is on it the
/// wait is twice as long, and once the finger is lifted and the reader asks for none, the
/// scan is being matched: that is work, not waiting, and the wait pauses until the reader
/// reports again.
public final class FingerWait: Sendable {
    /// The wait of every reader operation in this process: 60 s unless the host sets
    /// another (`touchgated --finger-timeout`, `TOUCHGATE_FINGER_TIMEOUT` for tests).
    public static var timeout: Duration {
        get { setting.withLock { $0 } }
        set { setting.withLock { $0 = newValue } }
    }

    /// The default wait: long enough to find the reader, well short of the heat model's minutes.
    public static let defaultTimeout = Duration.seconds(60)

    private static let setting = Mutex<Duration>(
        Invocation.environment("TOUCHGATE_FINGER_TIMEOUT").flatMap(Double.init)
            .map { Duration.milliseconds(Int64($0 * 1000)) } ?? defaultTimeout)

    private let timeout: Duration
    private let reader: String
    // The reader's last event and whether a finger is on it, only touched under their lock.
    private let state = Mutex(Activity())

    private struct Activity {
        var last = ContinuousClock.now
        /// A finger is on the reader (or it asks for none): the wait is doubled.
        var paused = false
        /// A finger was on the reader and has been lifted, and the reader asks for none:
        /// the scan is taken and being matched, which is work, not a wait, and not bounded
        /// here (its length grows with the gallery: a thousand prints take most of a minute
        /// on an idle machine, more on a busy one).
        var matching = false
        var sawFinger = false
    }

    init(timeout: Duration, reader: String) {
        self.timeout = timeout
        self.reader = reader
    }

    /// The reader reported `event`: the wait starts anew (doubled while a finger is on the reader).
    func activity(_ event: ReaderEvent) {
        state.withLock { state in
            state.last = .now
            if case .fingerStatus(let status) = event {
                state.paused = !status.isWaitingForFinger
                if status.contains(.present) { state.sawFinger = true }
                state.matching = state.sawFinger && status.isEmpty
            } else {
                state.paused = false
                state.matching = false
            }
        }
    }

    /// Runs `body` (one reader operation) and cancels it when the reader reports nothing
    /// for the timeout; it then throws `timed-out`.
    func bounding<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await withoutActuallyEscaping(body) { body in
            try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask { [self] in
                    try await expire()
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else {
                    throw CancellationError()
                }
                return value
            }
        }
    }

    private func expire() async throws {
        while true {
            // A finger on the reader earns one more timeout for the match, never more: a reader
            // stuck reporting a finger must not keep scanning either.
            let (since, paused, matching) = state.withLock { ($0.last, $0.paused, $0.matching) }
            if matching {
                // Work, not a wait, yet not for ever: a driver stuck after the scan must not hold
                // the reader from everyone (a 1,000-print identify takes a minute or two).
                if ContinuousClock.now >= since + timeout * Self.matchingAllowance { throw matchTooLong }
                try await Task.sleep(for: timeout, clock: .continuous)
                continue
            }
            let deadline = since + (paused ? timeout * 2 : timeout)
            if ContinuousClock.now >= deadline { throw timedOut }
            try await Task.sleep(until: deadline, clock: .continuous)
        }
    }

    /// How many timeouts the match of a taken scan may last.
    static let matchingAllowance = 10

    private var matchTooLong: ServiceError {
        ServiceError(.timedOut, "\(reader) took the finger but did not finish matching it within "
                     + "\(Int(Double((timeout * Self.matchingAllowance).components.seconds))) s, so the operation was ended; "
                     + "run the command again (unplug and plug in the reader if it happens again)")
    }

    private var timedOut: ServiceError {
        let seconds = Int((Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18).rounded())
        return ServiceError(.timedOut, "no finger on \(reader) within \(seconds) s, so the wait was ended (a reader kept "
                            + "waiting overheats and refuses everyone for minutes); run the command again and touch "
                            + "the reader when asked")
    }
}
