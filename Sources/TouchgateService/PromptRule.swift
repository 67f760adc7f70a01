import FingerprintKit

/// When to ask for a finger: exactly one prompt each time the reader waits for a scan,
/// whatever the driver reports about the finger.
///
/// A *wait* opens when the operation starts, after each accepted enroll stage that is not
/// the last, and after each retry hint. Its prompt is shown as soon as the driver reports
/// finger status "needed" (and no finger present), or a finger present, or else once the
/// grace period has passed, so that drivers behave alike:
/// - a driver that has reported no finger status in this operation (elanmoc reports none
///   at all) is prompted at once after each stage and each retry: the enroll-progress and
///   retry callbacks are the only sign it gives that it waits again;
/// - a driver whose status still says "needed" when it reports a retry (goodixmoc keeps
///   "needed", and "present" too, across its retries; fpcmoc and virtual_device keep
///   "needed" throughout) is waiting already and will report no change: prompted at once;
/// - a driver that reports "needed" only after the scan it belonged to gets its prompt
///   on time (from the grace period), and the late report is ignored;
/// - a driver that finishes enrollment in fewer stages than it announced ends with a
///   progress event showing the real total (`completed == total`).
/// A scan's result (a stage, a retry, or a one-scan operation ending with its scan taken)
/// that comes while its wait is still unprompted shows the prompt first: the scan outran
/// the grace period (a quick person, or a replayed recording), and the prompt still comes
/// once and before the result. A finger reported present while a wait is unprompted
/// prompts at once for the same reason. A status without "needed" holds the fallback back
/// (the reader says it is not waiting, as fpcmoc does once its last scan is in); a later
/// "needed" still prompts. A wait closes with its scan: no prompt comes after the scan it
/// asks for, and none once every stage is done or the operation ended. Drivers that keep
/// "needed" set for the whole operation and toggle only "present" (fpcmoc, synaptics,
/// virtual_device) report "needed" again when the finger lifts, before the stage event:
/// that report belongs to the scan just made and is ignored.
///
/// The grace period is derived from what the driver reports: it is ``graceFactor`` times
/// the longest time the driver has taken in this operation from a wait's opening to its
/// "needed" report (at least ``minimumGrace``), and ``initialGrace`` until it has
/// reported one. It is long (``longGrace``), a mere safety net, where a late fallback cannot
/// leave the person unprompted at their scan: readers of libfprint's image-device layer
/// (they report "needed" as each wait starts), and the waits after a stage of a driver that
/// reports finger status in this operation (its "present" prompts a scan that begins
/// before the grace period ends), so that a driver that takes its time to finish after its
/// last scan (fewer stages than announced, fpcmoc on a busy machine) gets no stray prompt.
///
/// A pure state machine: feed it ``Input``s in the order they happen, with the time since
/// the operation began, and perform the ``Output``s it returns. ``Prompter`` runs it over a
/// reader's events and a clock.
struct PromptRule: Sendable, Equatable {
    /// What happened.
    enum Input: Sendable, Equatable {
        /// The operation began (the first wait opens).
        case started
        /// The driver reported a finger status.
        case fingerStatus(FingerStatus)
        /// Enrollment accepted a scan.
        case enrollStage(completed: Int, total: Int)
        /// A scan was poor; the reader asks again.
        case retry(RetryReason)
        /// The grace period of wait `wait` (from ``Output/startGrace(wait:)``) has passed.
        case graceElapsed(wait: Int)
        /// The operation ended. `succeeded`: with its scan taken (an enrollment that made its
        /// print; a verify, identify or capture that matched, did not match, or ended on a
        /// poor scan); false when it failed or was cancelled before.
        case finished(succeeded: Bool)

        /// The reader event as an input.
        init(_ event: ReaderEvent) {
            switch event {
            case .fingerStatus(let status): self = .fingerStatus(status)
            case let .enrollStage(completed, total): self = .enrollStage(completed: completed, total: total)
            case .retry(let reason): self = .retry(reason)
            }
        }
    }

    /// What to do.
    enum Output: Sendable, Equatable {
        /// Ask for a finger; for enrollment, scan `stage` of `stages` (1-based).
        case prompt(stage: Int, stages: Int)
        /// Enrollment progress: `completed` of `total` scans done.
        case progress(completed: Int, total: Int)
        /// Show the hint for a poor scan.
        case retry(RetryReason)
        /// Start the grace period of wait `wait`, `after` long; report its end as
        /// ``Input/graceElapsed(wait:)``.
        case startGrace(wait: Int, after: Duration)
    }

    /// The grace period before the driver has shown, in this operation, how soon it reports
    /// "needed" once it waits.
    static let initialGrace = Duration.milliseconds(150)
    /// The shortest grace period a measurement gives: a prompt needs no more haste than this.
    static let minimumGrace = Duration.milliseconds(50)
    /// The grace period is this many times the slowest "needed" report measured, so that a
    /// driver reporting as slowly as it has before, on a machine as busy, is not overtaken.
    static let graceFactor = 4
    /// The safety-net grace period.
    /// Long enough that a reader still starting on a loaded machine reports "needed" first:
    /// a prompt before the reader waits has the scan made too early (and lost).
    static let longGrace = Duration.milliseconds(4000)

    /// Why a wait opened.
    private enum Opening { case start, stage, retry }

    /// Whether stages are counted (enrollment): then no wait opens once all are done.
    let counting: Bool
    /// Whether the driver reports "needed" as each wait starts (known).
    let timely: Bool
    /// The driver's last finger status in this operation; nil while it has reported none.
    private(set) var status: FingerStatus?
    /// The longest time the driver took in this operation from a wait's opening to its
    /// "needed" report in that wait; nil until measured.
    private(set) var slowestNeeded: Duration?
    /// Scans in all: as announced, then as the stage events report it.
    private(set) var stages: Int
    /// Scans accepted so far.
    private(set) var completed = 0
    /// The current wait's number (0 before the operation starts).
    private(set) var wait = 0
    /// Whether the current wait still needs its prompt.
    private var open = false
    /// When the current wait opened, and whether its "needed" report was measured.
    private var openedAt = Duration.zero
    private var measured = false
    /// Whether the current wait's grace period may still prompt.
    private var armed = false
    private var ended = false

    /// A rule for one operation; `stages` is what the reader announced (enrollment), or nil
    /// for operations of one scan (verify, identify, capture). `timely`: the reader is known
    /// to report "needed" as each wait starts.
    init(stages: Int?, timely: Bool = false) {
        counting = stages != nil
        self.stages = stages ?? 1
        self.timely = timely
    }

    /// The grace period of a wait that may still get a "needed" report: derived from the
    /// driver's reports so far (``initialGrace`` before any).
    var grace: Duration {
        guard let slowestNeeded else { return Self.initialGrace }
        return min(max(slowestNeeded * Self.graceFactor, Self.minimumGrace), Self.longGrace)
    }

    /// Takes `input`, which happened `time` after the operation began; returns what to do, in order.
    mutating func handle(_ input: Input, at time: Duration = .zero) -> [Output] {
        guard !ended else { return [] }
        switch input {
        case .started:
            return wait == 0 ? openWait(.start, at: time) : []
        case .fingerStatus(let reported):
            status = reported
            guard open else { return [] }
            if reported.contains(.present) { return [prompt()] }
            guard reported.contains(.needed) else {
                armed = false
                return []
            }
            if !measured {
                measured = true
                slowestNeeded = max(slowestNeeded ?? .zero, time - openedAt)
            }
            return [prompt()]
        case let .enrollStage(done, total):
            // The scan outran its prompt: shown now, before its result.
            let late = open ? [prompt()] : []
            completed = done
            stages = total
            return late + [.progress(completed: done, total: total)] + openWait(.stage, at: time)
        case .retry(let reason):
            let late = open ? [prompt()] : []
            return late + [.retry(reason)] + openWait(.retry, at: time)
        case .graceElapsed(let elapsed):
            guard open, armed, elapsed == wait else { return [] }
            return [prompt()]
        case .finished(let succeeded):
            ended = true
            // A one-scan operation whose scan came before its prompt: the prompt still comes
            // first, unless the reader said it was not waiting.
            let late = open && armed && succeeded && !counting ? [prompt()] : []
            open = false
            // Finished sooner than announced: the last progress shows the real total.
            if succeeded, counting, completed > 0, completed < stages {
                stages = completed
                return late + [.progress(completed: completed, total: completed)]
            }
            return late
        }
    }

    private mutating func openWait(_ opening: Opening, at time: Duration) -> [Output] {
        guard !counting || completed < stages else { return [] }
        wait += 1
        open = true
        armed = true
        openedAt = time
        measured = false
        if timely { return [.startGrace(wait: wait, after: Self.longGrace)] }
        switch opening {
        case .start:
            return [.startGrace(wait: wait, after: grace)]
        case .stage:
            // No status to wait for: the stage event is the sign it waits again.
            guard status != nil else { return [prompt()] }
            return [.startGrace(wait: wait, after: Self.longGrace)]
        case .retry:
            // Silent, or still "needed": either way no report will say it waits again.
            guard let status, !status.contains(.needed) else { return [prompt()] }
            return [.startGrace(wait: wait, after: grace)]
        }
    }

    private mutating func prompt() -> Output {
        open = false
        return .prompt(stage: min(completed + 1, stages), stages: stages)
    }
}
