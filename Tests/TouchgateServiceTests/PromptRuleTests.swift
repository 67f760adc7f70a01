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
        #expect(rule.handle(.started) == [.startGrace(wait: 1, after: PromptRule.initialGrace)])
        _ = rule.handle(.fingerStatus(.needed))
        // It reports status, so a scan that starts before the fallback is prompted by "present":
        // the wait after a stage can afford the long safety net.
        #expect(rule.handle(.enrollStage(completed: 1, total: 25)).last
                == .startGrace(wait: 2, after: PromptRule.longGrace))
        #expect(rule.handle(.fingerStatus(.needed)) == [.prompt(stage: 2, stages: 25)])
        // A retry while it still says "needed": it waits already and will say nothing more.
        #expect(rule.handle(.retry(.general)) == [.retry(.general), .prompt(stage: 2, stages: 25)])
        // A retry once it has said it no longer waits: its next "needed" is awaited, as
        // long as its reports have taken.
        _ = rule.handle(.fingerStatus([]))
        #expect(rule.handle(.retry(.general)).last == .startGrace(wait: 4, after: rule.grace))
        // An image reader is known to report on time.
        var image = PromptRule(stages: 5, timely: true)
        #expect(image.handle(.started) == [.startGrace(wait: 1, after: PromptRule.longGrace)])
        _ = image.handle(.fingerStatus(.needed))
        #expect(image.handle(.retry(.general)).last == .startGrace(wait: 2, after: PromptRule.longGrace))
    }

    @Test func aDriverThatReportsNoFingerStatusIsPromptedAtEachStageAndRetry() {
        var rule = PromptRule(stages: 9)
        #expect(rule.handle(.started) == [.startGrace(wait: 1, after: PromptRule.initialGrace)])
        #expect(rule.handle(.graceElapsed(wait: 1)) == [.prompt(stage: 1, stages: 9)])
        #expect(rule.handle(.enrollStage(completed: 1, total: 9))
                == [.progress(completed: 1, total: 9), .prompt(stage: 2, stages: 9)])
        #expect(rule.handle(.retry(.centerFinger)) == [.retry(.centerFinger), .prompt(stage: 2, stages: 9)])
    }

    @Test func theGraceIsDerivedFromHowSoonTheDriverReportsNeeded() {
        var rule = PromptRule(stages: 12)
        #expect(rule.grace == PromptRule.initialGrace, "nothing measured yet")
        _ = rule.handle(.started, at: .milliseconds(0))
        _ = rule.handle(.fingerStatus(.needed), at: .milliseconds(30))
        #expect(rule.grace == .milliseconds(30) * PromptRule.graceFactor)
        _ = rule.handle(.fingerStatus([.needed, .present]), at: .milliseconds(900))
        _ = rule.handle(.fingerStatus([]), at: .milliseconds(1000))
        _ = rule.handle(.enrollStage(completed: 1, total: 12), at: .milliseconds(1100))
        // The slowest report counts; the person's touch ("present") is not the driver's pace.
        _ = rule.handle(.fingerStatus(.needed), at: .milliseconds(1150))
        #expect(rule.grace == .milliseconds(50) * PromptRule.graceFactor)
        _ = rule.handle(.fingerStatus([]), at: .milliseconds(2000))
        #expect(rule.handle(.retry(.general), at: .milliseconds(2100)).last
                == .startGrace(wait: 3, after: .milliseconds(200)))
        // Bounded both ways.
        var quick = PromptRule(stages: nil)
        _ = quick.handle(.started, at: .zero)
        _ = quick.handle(.fingerStatus(.needed), at: .milliseconds(1))
        #expect(quick.grace == PromptRule.minimumGrace)
        var slow = PromptRule(stages: nil)
        _ = slow.handle(.started, at: .zero)
        _ = slow.handle(.fingerStatus(.needed), at: .seconds(3))
        #expect(slow.grace == PromptRule.longGrace)
    }

    /// elanmoc as libfprint 1.94.5's recording replays (tests/elanmoc): no finger status at
    /// all, nine stages with a retry before the eighth and the ninth, all within
    /// milliseconds (the grace period never ends first), then a verify and an identify.
    @Test func theElanmocSequenceIsPromptedOncePerScan() {
        var steps: [Step] = []
        var expected: [String] = []
        for stage in 1...9 {
            if [8, 9].contains(stage) {
                steps += [.retry]
                expected += ["ask \(stage)/9", "retry"]
            }
            steps += [.stage(stage, of: 9)]
            expected += ["ask \(stage)/9", "done \(stage)/9"]
        }
        let seen = Self.transcript(steps + [.succeeded], stages: 9)
        #expect(seen == expected)
        #expect(seen.filter { $0.hasPrefix("ask") }.count == 11, "9 stages and 2 retries")
        #expect(Self.transcript([.succeeded], stages: nil) == ["ask"], "a verify's scan outran the grace period")
        #expect(Self.transcript([.failed], stages: nil) == [], "no scan taken, no prompt after the fact")
    }

    /// goodixmoc as libfprint 1.94.5's recording replays (tests/goodixmoc): "needed" as each
    /// capture starts, "present" once it has the finger; a retry may come with either and
    /// is followed by no change at all (the next capture's "needed" and "present" are
    /// already set); twelve stages and eight retries.
    @Test func theGoodixmocSequenceIsPromptedOncePerScan() {
        // The order of the driver's finger status and enroll progress reports in the replay.
        let recorded: [Step] = [
            .needed, .touched, .retry, .stage(1, of: 12),
            .needed, .touched, .stage(2, of: 12),
            .needed, .retry, .touched, .retry, .stage(3, of: 12),
            .needed, .touched, .stage(4, of: 12),
            .needed, .retry, .touched, .stage(5, of: 12),
            .needed, .retry, .touched, .stage(6, of: 12),
            .needed, .touched, .stage(7, of: 12),
            .needed, .touched, .stage(8, of: 12),
            .needed, .retry, .retry, .retry, .touched, .stage(9, of: 12),
            .needed, .touched, .stage(10, of: 12),
            .needed, .touched, .stage(11, of: 12),
            .needed, .touched, .stage(12, of: 12),
            .lifted, .succeeded,
        ]
        let seen = Self.transcript(recorded, stages: 12)
        #expect(seen.filter { $0.hasPrefix("ask") }.count == 20, "12 stages and 8 retries: \(seen)")
        #expect(seen.filter { $0 == "retry" }.count == 8)
        // Every scan's prompt comes before its result, and only one.
        var waiting = false
        for line in seen {
            if line.hasPrefix("ask") {
                #expect(!waiting, "two prompts for one scan: \(seen)")
                waiting = true
            } else {
                #expect(waiting, "a result without its prompt: \(seen)")
                waiting = false
            }
        }
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
