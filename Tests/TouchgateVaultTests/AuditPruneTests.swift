import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit pruning: six-year retention, chain stays verifiable")
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
        #expect(try fixture.log.prune(before: cutoff, force: false, vaultUser: "admin") == 5)
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

    @Test("on a machine that ships, records the collector has not confirmed are kept unless forced")
    func keepUnshipped() throws {
        let (fixture, now) = try agedFixture()
        let cutoff = AuditLog.retentionCutoff(now: now).addingTimeInterval(-Self.day)
        let trail = try #require(try fixture.log.seal()).trail
        // The collector holds records 1…3 of the five old ones.
        try fixture.log.markShipped(trail: trail, through: 3)
        #expect {
            try fixture.log.prune(before: cutoff, force: false)
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
        #expect(try fixture.log.prune(before: cutoff, force: false) == 5)
        // Forced, unshipped records go too (the operator said so).
        let (forced, _) = try agedFixture()
        try forced.log.markShipped(trail: try #require(try forced.log.seal()).trail, through: 1)
        #expect(try forced.log.prune(before: cutoff, force: true) == 5)
        records = try forced.log.records()
        #expect(try forced.log.verify() == .intact(count: records.count))
    }

    @Test("a store that never shipped prunes as before: the guard is for fleet machines only")
    func neverShippedPrunes() throws {
        let (fixture, now) = try agedFixture()
        #expect(try fixture.log.prune(before: AuditLog.retentionCutoff(now: now), force: false) == 5)
    }

    @Test("a cutoff inside six years is refused without force, removes nothing, and is itself audited")
    func refuseYoung() throws {
        let (fixture, now) = try agedFixture()
        #expect(throws: AuditError.self) {
            try fixture.log.prune(before: now.addingTimeInterval(-Self.day), force: false)
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
            try fixture.log.prune(before: limit.addingTimeInterval(1), force: false)
        }
        #expect(try fixture.log.prune(before: limit, force: false) == 5)
    }

    @Test("with force, young records go too, and the chain still verifies")
    func forced() throws {
        let (fixture, now) = try agedFixture()
        #expect(try fixture.log.prune(before: now.addingTimeInterval(1), force: true) == 8)
        let records = try fixture.log.records()
        #expect(records.map(\.sequence) == [9])
        #expect(records[0].reason.contains("forced"))
        #expect(try fixture.log.verify() == .intact(count: 1))
    }

    @Test("a pruned record put back is detected")
    func restoredRecord() throws {
        let (fixture, now) = try agedFixture()
        try fixture.tamper("CREATE TABLE saved AS SELECT * FROM audit WHERE seq = 5")
        try fixture.log.prune(before: AuditLog.retentionCutoff(now: now), force: false)
        try fixture.tamper("INSERT INTO audit SELECT * FROM saved")
        #expect(try fixture.log.verify().brokenAt == 5)
    }

    @Test("moving the prune anchor without the key is detected")
    func movedAnchor() throws {
        let (fixture, now) = try agedFixture()
        try fixture.log.prune(before: AuditLog.retentionCutoff(now: now), force: false)
        try fixture.tamper("DELETE FROM audit WHERE seq = 6")
        try fixture.tamper("UPDATE auditHead SET anchorSeq = 6")
        #expect(try fixture.log.verify().brokenAt != nil)
    }

    @Test("a broken chain is not pruned: the evidence is kept")
    func brokenNotPruned() throws {
        let (fixture, now) = try agedFixture()
        try fixture.tamper("UPDATE audit SET reason = 'edited' WHERE seq = 2")
        #expect(throws: AuditError.chainBroken(at: 2, reason: "record 2 was altered or forged (its MAC does not match)")) {
            try fixture.log.prune(before: AuditLog.retentionCutoff(now: now), force: false)
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
        #expect(try fixture.log.prune(before: AuditLog.retentionCutoff(now: now), force: false) == 2)
        #expect(try fixture.log.records().map(\.sequence) == [3, 4, 5])
        #expect(try fixture.log.verify() == .intact(count: 3))
    }
}
