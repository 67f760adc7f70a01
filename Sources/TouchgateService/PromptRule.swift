import FingerprintKit

/// When to ask for a finger: exactly one prompt each time the reader waits for a scan,
/// whatever the driver reports about the finger.
///
/// A *wait* opens when the operation starts, after each accepted enroll stage that is not
/// the last, and after each retry hint. Its prompt is shown as soon as the driver reports
/// finger status "needed" (and no finger present), or else once the grace period has
/// passed, so that drivers behave alike:
/// - a driver that never reports finger status still gets one prompt per scan;
/// - a driver that reports "needed" only after the scan it belonged to gets its prompt
///   on time (from the grace period), and the late report is ignored;
/// - a driver that stops reporting "needed" after a retry hint is prompted all the same;
/// - a driver that finishes enrollment in fewer stages than it announced ends with a
///   progress event showing the real total (`completed == total`).
/// A finger reported present while a wait is still unprompted means the scan began
/// before the grace period ran out (a quick person, or a replayed recording): its prompt
/// is shown then, so it still comes before the scan's result. A status without "needed"
/// holds the fallback back (the reader says it is not waiting, as fpcmoc does once its
/// last scan is in); a later "needed" still prompts. A wait closes with its scan (a
/// stage, a retry, or the end of the operation): no prompt comes after the scan it asks
/// for, and none once every stage is done. Drivers that keep "needed" set for the whole
/// operation and toggle only "present" (fpcmoc, virtual_device) report "needed" again
/// when the finger lifts, before the stage event: that report belongs to the scan just
/// made and is ignored.
///
/// The grace period is short (``shortGrace``) except where a late fallback cannot leave the
/// person unprompted at their scan: readers of libfprint's image-device layer (they report
/// "needed" as each wait starts), and the waits after a stage of any driver that reports
/// finger status at all in this operation (its "present" prompts a scan that begins before
/// the grace period ends). There it is long (``longGrace``), a mere safety net, so that a
/// driver that takes its time to finish after its last scan (fewer stages than announced,
/// fpcmoc on a busy machine) gets no stray prompt. Start and retry waits, and every wait of
/// a driver that reports no finger status, keep the short period.
///
/// A pure state machine: feed it ``Input``s in the order they happen, perform the
/// ``Output``s it returns. ``Prompter`` runs it over a reader's events and a clock.
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
        /// The operation ended, successfully or not.
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

    /// The grace period while the driver has not shown that it reports "needed" on time.
    static let shortGrace = Duration.milliseconds(150)
    /// The grace period once it has.
    /// Long enough that a reader still starting on a loaded machine reports "needed" first:
    /// a prompt before the reader waits has the scan made too early (and lost).
    static let longGrace = Duration.milliseconds(4000)

    /// Whether stages are counted (enrollment): then no wait opens once all are done.
    let counting: Bool
    /// Whether the driver reports "needed" as each wait starts (known).
    let timely: Bool
    /// Whether the driver has reported any finger status in this operation (seen).
    private(set) var reportsStatus = false
    /// Scans in all: as announced, then as the stage events report it.
    private(set) var stages: Int
    /// Scans accepted so far.
    private(set) var completed = 0
    /// The current wait's number (0 before the operation starts).
    private(set) var wait = 0
    /// Whether the current wait still needs its prompt.
    private var open = false
    /// Whether the current wait opened after a stage.
    private var afterStage = false
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

    /// Takes `input`; returns what to do, in order.
    mutating func handle(_ input: Input) -> [Output] {
        guard !ended else { return [] }
        switch input {
        case .started:
            return wait == 0 ? openWait() : []
        case .fingerStatus(let status):
            reportsStatus = true
            guard open else { return [] }
            if status.contains(.present) { return [prompt()] }
            guard status.contains(.needed) else {
                armed = false
                return []
            }
            return [prompt()]
        case let .enrollStage(done, total):
            completed = done
            stages = total
            open = false
            return [.progress(completed: done, total: total)] + openWait(afterStage: true)
        case .retry(let reason):
            open = false
            return [.retry(reason)] + openWait()
        case .graceElapsed(let elapsed):
            guard open, armed, elapsed == wait else { return [] }
            return [prompt()]
        case .finished(let succeeded):
            ended = true
            open = false
            // Finished sooner than announced: the last progress shows the real total.
            if succeeded, counting, completed > 0, completed < stages {
                stages = completed
                return [.progress(completed: completed, total: completed)]
            }
            return []
        }
    }

    private mutating func openWait(afterStage: Bool = false) -> [Output] {
        guard !counting || completed < stages else { return [] }
        wait += 1
        open = true
        armed = true
        self.afterStage = afterStage
        let long = timely || (afterStage && reportsStatus)
        return [.startGrace(wait: wait, after: long ? Self.longGrace : Self.shortGrace)]
    }

    private mutating func prompt() -> Output {
        open = false
        return .prompt(stage: min(completed + 1, stages), stages: stages)
    }
}
