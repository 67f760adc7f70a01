import FingerprintKit
import Testing
@testable import TouchgateService

/// The prompt rule over scripted event sequences: the four driver behaviours measured on
/// real readers, and the readers that behave.
@Suite struct PromptRuleTests {
    /// One step of a script: an input, or the current wait's grace period running out.
    enum Step {
        case input(PromptRule.Input)
        case graceElapses

        static let needed = Step.input(.fingerStatus(.needed))
        static let touched = Step.input(.fingerStatus([.needed, .present]))
        static let lifted = Step.input(.fingerStatus([]))
        static func stage(_ done: Int, of total: Int) -> Step { .input(.enrollStage(completed: done, total: total)) }
        static let retry = Step.input(.retry(.centerFinger))
        static let succeeded = Step.input(.finished(succeeded: true))
        static let failed = Step.input(.finished(succeeded: false))
    }

    /// Runs `steps` (after `.started`) and returns what a person would see, in order:
    /// `ask 2/5` for a prompt, `done 2/5` for progress, `retry` for a hint.
    static func transcript(_ steps: [Step], stages: Int?, timely: Bool = false) -> [String] {
        var rule = PromptRule(stages: stages, timely: timely)
        var seen: [String] = []
        func play(_ input: PromptRule.Input) {
            for output in rule.handle(input) {
                switch output {
                case let .prompt(stage, total): seen.append(stages == nil ? "ask" : "ask \(stage)/\(total)")
                case let .progress(done, total): seen.append("done \(done)/\(total)")
                case .retry: seen.append("retry")
                case .startGrace: break
                }
            }
        }
        play(.started)
        for step in steps {
            switch step {
            case .input(let input): play(input)
            case .graceElapses: play(.graceElapsed(wait: rule.wait))
            }
        }
        return seen
    }

    /// `ask n/total` then `done n/total` for each of `range`.
    static func askedThenDone(_ range: ClosedRange<Int>, of total: Int) -> [String] {
        range.flatMap { ["ask \($0)/\(total)", "done \($0)/\(total)"] }
    }

    // MARK: (a) never reports finger status

    @Test func aDriverWithoutFingerStatusIsPromptedOncePerScan() {
        // Nine scans, nothing but stages: today zero prompts.
        var steps: [Step] = []
        for stage in 1...9 { steps += [.graceElapses, .stage(stage, of: 9)] }
        steps += [.graceElapses, .succeeded]
        #expect(Self.transcript(steps, stages: 9) == Self.askedThenDone(1...9, of: 9))
    }

    @Test func aVerifyWithoutFingerStatusIsPromptedOnce() {
        #expect(Self.transcript([.graceElapses, .graceElapses, .succeeded], stages: nil) == ["ask"])
        // A finger on the reader before the grace period ends: the prompt comes at once,
        // still before the scan's result, and only once.
        #expect(Self.transcript([.touched, .graceElapses, .succeeded], stages: nil) == ["ask"])
        #expect(Self.transcript([.touched, .stage(1, of: 2), .touched, .stage(2, of: 2), .succeeded], stages: 2)
                == Self.askedThenDone(1...2, of: 2))
    }

    // MARK: (b) reports "needed" only after the scan it belonged to

    @Test func aDriverReportingNeededLateIsPromptedBeforeEachScanAndNotAfterTheLast() {
        // The report comes between the touch and the stage event…
        var steps: [Step] = []
        for stage in 1...8 { steps += [.graceElapses, .needed, .stage(stage, of: 8)] }
        steps += [.needed, .graceElapses, .succeeded]
        #expect(Self.transcript(steps, stages: 8) == Self.askedThenDone(1...8, of: 8))
        // …or after the stage event: then it prompts the next scan at once, never a ninth.
        var after: [Step] = [.graceElapses]
        for stage in 1...8 { after += [.stage(stage, of: 8), .needed, .graceElapses] }
        after += [.succeeded]
        let seen = Self.transcript(after, stages: 8)
        #expect(seen == Self.askedThenDone(1...8, of: 8))
        #expect(!seen.contains("ask 9/8"))
    }

    // MARK: (c) no "needed" again after a retry hint

    @Test func aDriverSilentAfterRetriesIsPromptedAfterEachRetry() {
        // Twelve stages, two poor scans before every third: twenty scans, so twenty prompts
        // (today twelve). The driver reports "needed" as a stage's wait starts, but says
        // nothing after a retry until the next touch.
        var steps: [Step] = []
        var expected: [String] = []
        for stage in 1...12 {
            steps += [.needed]
            if stage % 3 == 0 {
                for _ in 0..<2 {
                    steps += [.touched, .retry, .graceElapses]
                    expected += ["ask \(stage)/12", "retry"]
                }
            }
            steps += [.touched, .stage(stage, of: 12)]
            expected += ["ask \(stage)/12", "done \(stage)/12"]
        }
        let seen = Self.transcript(steps + [.succeeded], stages: 12)
        #expect(seen == expected)
        #expect(seen.filter { $0.hasPrefix("ask") }.count == 20)
    }

    @Test func retryWaitsAreNotPromptedTwice() {
        let seen = Self.transcript([.needed, .touched, .retry, .graceElapses, .needed, .graceElapses,
                                    .touched, .stage(1, of: 2), .needed, .touched, .stage(2, of: 2), .succeeded],
                                   stages: 2)
        #expect(seen == ["ask 1/2", "retry", "ask 1/2", "done 1/2", "ask 2/2", "done 2/2"])
    }

    // MARK: (d) finishes in fewer stages than announced

    @Test func aDriverFinishingEarlyEndsWithTheRealTotal() {
        var steps: [Step] = []
        for stage in 1...12 { steps += [.needed, .touched, .stage(stage, of: 25)] }
        steps += [.succeeded]
        let seen = Self.transcript(steps, stages: 25)
        #expect(seen == Self.askedThenDone(1...12, of: 25) + ["done 12/12"])
        #expect(!seen.contains("ask 13/25"))
    }

    @Test func aFailedEnrollmentDoesNotClaimARealTotal() {
        let seen = Self.transcript([.needed, .touched, .stage(1, of: 5), .failed], stages: 5)
        #expect(seen == ["ask 1/5", "done 1/5"])
    }

    @Test func aDriverThatReportsFingerStatusGetsTheLongGraceAfterItsStages() {
        var rule = PromptRule(stages: 25)
        #expect(rule.handle(.started) == [.startGrace(wait: 1, after: PromptRule.shortGrace)])
        _ = rule.handle(.fingerStatus(.needed))
        // It reports status, so a scan that starts before the fallback is prompted by "present":
        // the wait after a stage can afford the long safety net; a retry's wait cannot.
        #expect(rule.handle(.enrollStage(completed: 1, total: 25)).last
                == .startGrace(wait: 2, after: PromptRule.longGrace))
        #expect(rule.handle(.fingerStatus(.needed)) == [.prompt(stage: 2, stages: 25)])
        #expect(rule.handle(.retry(.general)).last == .startGrace(wait: 3, after: PromptRule.shortGrace))
        // An image reader is known to report on time.
        var image = PromptRule(stages: 5, timely: true)
        #expect(image.handle(.started) == [.startGrace(wait: 1, after: PromptRule.longGrace)])
    }

    @Test func aDriverThatReportsNoFingerStatusKeepsTheShortGrace() {
        var rule = PromptRule(stages: 9)
        #expect(rule.handle(.started) == [.startGrace(wait: 1, after: PromptRule.shortGrace)])
        #expect(rule.handle(.graceElapsed(wait: 1)) == [.prompt(stage: 1, stages: 9)])
        #expect(rule.handle(.enrollStage(completed: 1, total: 9)).last
                == .startGrace(wait: 2, after: PromptRule.shortGrace))
    }

    /// fpcmoc as its recording replays (no time passes between events): "needed" once at
    /// the start and kept set, "present" on and off around every scan, 12 stages of 25
    /// announced with 3 retries, then "needed" cleared.
    @Test func theFpcmocSequenceIsPromptedOncePerScanAndEndsWithTheRealTotal() {
        var steps: [Step] = [.needed]
        var expected: [String] = []
        for stage in 1...12 {
            if [6, 8, 11].contains(stage) {
                steps += [.touched, .needed, .retry]
                expected += ["ask \(stage)/25", "retry"]
            }
            steps += [.touched, .needed, .stage(stage, of: 25)]
            expected += ["ask \(stage)/25", "done \(stage)/25"]
        }
        steps += [.lifted, .graceElapses, .succeeded]
        let seen = Self.transcript(steps, stages: 25)
        #expect(seen == expected + ["done 12/12"])
        #expect(seen.filter { $0.hasPrefix("ask") }.count == 15, "12 stages and 3 retries")
    }

    @Test func aReaderSayingItNoLongerWaitsHoldsTheFallbackBack() {
        // "needed" cleared before the grace period ends: no prompt; a later "needed" prompts.
        #expect(Self.transcript([.lifted, .graceElapses, .succeeded], stages: nil) == [])
        #expect(Self.transcript([.lifted, .graceElapses, .needed, .succeeded], stages: nil) == ["ask"])
    }

    // MARK: readers that behave

    @Test func aDriverReportingEveryWaitIsPromptedOncePerWait() {
        // needed, needed again before the finger, needed+present while reading: one prompt.
        var steps: [Step] = []
        for stage in 1...5 { steps += [.needed, .lifted, .needed, .touched, .needed, .stage(stage, of: 5)] }
        steps += [.needed, .succeeded]
        #expect(Self.transcript(steps, stages: 5, timely: true) == Self.askedThenDone(1...5, of: 5))
    }

    @Test func aStaleGracePeriodDoesNotPromptALaterWait() {
        var rule = PromptRule(stages: 3)
        _ = rule.handle(.started)
        _ = rule.handle(.fingerStatus(.needed))
        _ = rule.handle(.enrollStage(completed: 1, total: 3))
        // Wait 1's grace period ends late, during wait 2: nothing.
        #expect(rule.handle(.graceElapsed(wait: 1)) == [])
        #expect(rule.handle(.graceElapsed(wait: 2)) == [.prompt(stage: 2, stages: 3)])
        _ = rule.handle(.finished(succeeded: false))
        #expect(rule.handle(.fingerStatus(.needed)) == [])
        #expect(rule.handle(.graceElapsed(wait: 2)) == [])
    }
}
