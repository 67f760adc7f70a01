import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit pruning: a retention of at least six years, chain stays verifiable")
struct AuditPruneTests {
    private static let day: TimeInterval = 86_400

    /// Five records from seven years ago, then three from now.
    private func agedFixture() throws -> (AuditFixture, Date) {
        let now = Date()
        let clock = AuditTestClock(now.addingTimeInterval(-7 * 366 * Self.day))
        let fixture = try AuditFixture(clock: clock)
        try fixture.appendSample(5)
        clock.now = now
        try fixture.appendSample(3)
        return (fixture, now)
    }

    @Test("records older than six years are pruned without force; the rest still verifies")
    func pruneOld() throws {
        let (fixture, now) = try agedFixture()
        let cutoff = AuditLog.retentionCutoff(now: now).addingTimeInterval(-Self.day)
        #expect(try fixture.log.prune(before: cutoff, vaultUser: "admin") == 5)
        let records = try fixture.log.records()
        #expect(records.map(\.sequence) == [6, 7, 8, 9])
        #expect(records.last?.event == .auditPrune)
        #expect(records.last?.outcome == .success)
        #expect(records.last?.vaultUser == "admin")
        #expect(records.last?.reason.contains("removed 5 records up to #5") == true)
        #expect(try fixture.log.verify() == .intact(count: 4))
        // Appending after a prune continues the chain.
        try fixture.log.append(.vaultLock, .success)
        #expect(try fixture.log.verify() == .intact(count: 5))
    }

    @Test("on a machine that ships, records the collector has not confirmed are kept unless asked for")
    func keepUnshipped() throws {
        let (fixture, now) = try agedFixture()
        let cutoff = AuditLog.retentionCutoff(now: now).addingTimeInterval(-Self.day)
        let trail = try #require(try fixture.log.seal()).trail
        // The collector holds records 1…3 of the five old ones.
        try fixture.log.markShipped(trail: trail, through: 3)
        #expect {
            try fixture.log.prune(before: cutoff)
        } throws: { error in
            guard case let .unshipped(through, shipped) = error as? AuditError else { return false }
            return through == 5 && shipped == 3 && "\(error)".contains("run `touchgate audit ship` first")
        }
        var records = try fixture.log.records()
        #expect(records.count == 9 && records.first?.sequence == 1)
        #expect(records.last?.event == .auditPrune && records.last?.outcome == .denied
                && records.last?.reason.contains("records 4…5 not shipped yet") == true, "\(records.last!)")
        // Once shipped, the same prune goes.
        try fixture.log.markShipped(trail: trail, through: 9)
        #expect(try fixture.log.prune(before: cutoff) == 5)
        // Forced, unshipped records go too (the operator said so).
        let (forced, _) = try agedFixture()
        try forced.log.markShipped(trail: try #require(try forced.log.seal()).trail, through: 1)
        #expect(try forced.log.prune(before: cutoff, evenUnshipped: true) == 5)
        records = try forced.log.records()
        #expect(records.last?.reason.contains("records 2…5 had not reached the fleet collector") == true,
                "\(records.last!)")
        #expect(try forced.log.verify() == .intact(count: records.count))
    }

    @Test("a store that never shipped prunes as before: the guard is for fleet machines only")
    func neverShippedPrunes() throws {
        let (fixture, now) = try agedFixture()
        #expect(try fixture.log.prune(before: AuditLog.retentionCutoff(now: now)) == 5)
    }

    @Test("a cutoff inside six years is refused, removes nothing, and is itself audited")
    func refuseYoung() throws {
        let (fixture, now) = try agedFixture()
        #expect(throws: AuditError.self) {
            try fixture.log.prune(before: now.addingTimeInterval(-Self.day))
        }
        let records = try fixture.log.records()
        #expect(records.count == 9)
        #expect(records.last?.event == .auditPrune)
        #expect(records.last?.outcome == .denied)
        #expect(try fixture.log.verify() == .intact(count: 9))
    }

    @Test("the retention boundary is six calendar years")
    func boundary() throws {
        let (fixture, now) = try agedFixture()
        let limit = AuditLog.retentionCutoff(now: now)
        let components = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: limit)
        let nowComponents = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: now)
        #expect(components.year == nowComponents.year! - 6)
        #expect(throws: AuditError.self) {
            try fixture.log.prune(before: limit.addingTimeInterval(1))
        }
        #expect(try fixture.log.prune(before: limit) == 5)
    }

    @Test("nothing removes a record inside the retention: not evenUnshipped, not a shorter retention")
    func retentionCannotBeShortened() throws {
        let (fixture, now) = try agedFixture()
        for years in [AuditLog.retentionYears, 0, -3] {
            #expect {
                try fixture.log.prune(before: now.addingTimeInterval(1), keepingYears: years, evenUnshipped: true)
            } throws: { error in
                guard case let .withinRetention(_, oldestAllowed, kept) = error as? AuditError else { return false }
                return kept == AuditLog.retentionYears && oldestAllowed == AuditLog.retentionCutoff(now: now)
            }
        }
        let records = try fixture.log.records()
        #expect(records.count == 11 && records.first?.sequence == 1, "nothing removed; three refusals recorded")
        #expect(records.suffix(3).allSatisfy { $0.event == .auditPrune && $0.outcome == .denied })
        #expect(try fixture.log.verify() == .intact(count: 11))
    }

    @Test("a longer retention keeps records six years would let go, and says how long in its refusal")
    func longerRetention() throws {
        let (fixture, now) = try agedFixture()
        // The five old records are seven years old: eight years keeps them.
        let sixYears = AuditLog.retentionCutoff(now: now)
        #expect(AuditLog.retentionCutoff(now: now, years: 8) < sixYears)
        #expect {
            try fixture.log.prune(before: sixYears, keepingYears: 8)
        } throws: { error in
            guard case let .withinRetention(_, _, years) = error as? AuditError else { return false }
            let message = "\(error)"
            return years == 8 && message.contains("kept for 8 years") && message.contains("--force does not")
        }
        #expect(try fixture.log.records().first?.sequence == 1)
        #expect(try fixture.log.prune(before: AuditLog.retentionCutoff(now: now, years: 8), keepingYears: 8) == 0,
                "nothing is eight years old")
        #expect(try fixture.log.prune(before: sixYears, keepingYears: 6) == 5)
    }

    @Test("the refusal names the latest day allowed, in the form --before takes, and that day is accepted")
    func refusalNamesTheLatestDay() throws {
        let (fixture, now) = try agedFixture()
        var refusal = ""
        do {
            try fixture.log.prune(before: now)
        } catch {
            refusal = "\(error)"
        }
        let day = AuditLog.retentionCutoff(now: now).formatted(.iso8601.year().month().day())
        #expect(refusal.contains("latest cutoff allowed today is \(day)"), "\(refusal)")
        #expect(refusal.contains("nothing was removed"))
        let midnight = try Date.ISO8601FormatStyle().year().month().day().parse(day)
        #expect(try fixture.log.prune(before: midnight) == 5)
    }

    @Test("a prune record says what it removed, in words AuditPruneSummary reads back")
    func summaryRoundTrip() throws {
        let (fixture, now) = try agedFixture()
        try fixture.log.prune(before: AuditLog.retentionCutoff(now: now))
        let record = try #require(try fixture.log.records().last)
        #expect(AuditPruneSummary(record) == AuditPruneSummary(removed: 5, through: 5))
        // A prune that removed nothing, a refusal, or another event is no summary.
        try fixture.log.prune(before: AuditLog.retentionCutoff(now: now))
        #expect(AuditPruneSummary(try #require(try fixture.log.records().last)) == nil)
        #expect(throws: AuditError.self) { try fixture.log.prune(before: now) }
        #expect(AuditPruneSummary(try #require(try fixture.log.records().last)) == nil)
        #expect(AuditPruneSummary(reason: "removed 12 records up to #40") == AuditPruneSummary(removed: 12, through: 40))
        for reason in ["removed 0 records up to #4", "removed 3 records up to 4", "removed three records up to #4",
                       "nothing before 2019-01-01T00:00:00Z", "removed 3 records up to #"] {
            #expect(AuditPruneSummary(reason: reason) == nil, "\(reason)")
        }
    }

    @Test("a pruned record put back is detected")
    func restoredRecord() throws {
        let (fixture, now) = try agedFixture()
        try fixture.tamper("CREATE TABLE saved AS SELECT * FROM audit WHERE seq = 5")
        try fixture.log.prune(before: AuditLog.retentionCutoff(now: now))
        try fixture.tamper("INSERT INTO audit SELECT * FROM saved")
        #expect(try fixture.log.verify().brokenAt == 5)
    }

    @Test("moving the prune anchor without the key is detected")
    func movedAnchor() throws {
        let (fixture, now) = try agedFixture()
        try fixture.log.prune(before: AuditLog.retentionCutoff(now: now))
        try fixture.tamper("DELETE FROM audit WHERE seq = 6")
        try fixture.tamper("UPDATE auditHead SET anchorSeq = 6")
        #expect(try fixture.log.verify().brokenAt != nil)
    }

    @Test("a broken chain is not pruned: the evidence is kept")
    func brokenNotPruned() throws {
        let (fixture, now) = try agedFixture()
        try fixture.tamper("UPDATE audit SET reason = 'edited' WHERE seq = 2")
        #expect(throws: AuditError.chainBroken(at: 2, reason: "record 2 was altered or forged (its MAC does not match)")) {
            try fixture.log.prune(before: AuditLog.retentionCutoff(now: now))
        }
        let records = try fixture.log.records()
        #expect(records.first?.sequence == 1)
        #expect(records.last?.event == .auditPrune)
        #expect(records.last?.outcome == .error)
    }

    @Test("records written after a clock jump backwards are not pruned out of order")
    func clockSetBack() throws {
        let now = Date()
        let clock = AuditTestClock(now.addingTimeInterval(-8 * 366 * Self.day))
        let fixture = try AuditFixture(clock: clock)
        try fixture.appendSample(2)
        clock.now = now
        try fixture.appendSample(1)
        clock.now = now.addingTimeInterval(-9 * 366 * Self.day)
        try fixture.appendSample(1)
        clock.now = now
        #expect(try fixture.log.prune(before: AuditLog.retentionCutoff(now: now)) == 2)
        #expect(try fixture.log.records().map(\.sequence) == [3, 4, 5])
        #expect(try fixture.log.verify() == .intact(count: 3))
    }
}
