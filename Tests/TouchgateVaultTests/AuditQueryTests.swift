import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit queries: filters, order and limit in SQL")
struct AuditQueryTests {
    /// Ten records a minute apart from 1_700_000_000: auth attempts failing on even
    /// minutes, item reads of `a` or `b` succeeding on odd ones, minute 9 a denied read of `a`.
    private func minuteLog() throws -> (AuditFixture, Date) {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let clock = AuditTestClock(start)
        let fixture = try AuditFixture(clock: clock)
        for minute in 0..<10 {
            clock.now = start.addingTimeInterval(Double(minute) * 60)
            if minute == 9 {
                try fixture.log.append(.itemRead, .denied, item: "a", reason: "minute 9")
            } else if minute % 2 == 0 {
                try fixture.log.append(.authAttempt, .failure, reason: "minute \(minute)")
            } else {
                try fixture.log.append(.itemRead, .success, item: minute % 4 == 1 ? "a" : "b", reason: "minute \(minute)")
            }
        }
        return (fixture, start)
    }

    @Test("since and until bound the wall time: since inclusive, until exclusive")
    func wallTime() throws {
        let (fixture, start) = try minuteLog()
        let log = fixture.log
        #expect(try log.records(AuditQuery(since: start.addingTimeInterval(300))).map(\.sequence) == [6, 7, 8, 9, 10])
        #expect(try log.records(AuditQuery(until: start.addingTimeInterval(120))).map(\.sequence) == [1, 2])
        #expect(try log.records(AuditQuery(since: start.addingTimeInterval(60), until: start.addingTimeInterval(180)))
            .map(\.sequence) == [2, 3])
        #expect(try log.records(AuditQuery(since: start.addingTimeInterval(3600))).isEmpty)
        #expect(try log.records()[4].time == start.addingTimeInterval(240))
    }

    @Test("item, event and outcome select exactly; several events or outcomes mean any of them")
    func fields() throws {
        let (fixture, _) = try minuteLog()
        let log = fixture.log
        #expect(try log.records(AuditQuery(item: "a")).map(\.sequence) == [2, 6, 10])
        #expect(try log.records(AuditQuery(item: "A")).isEmpty, "names match exactly")
        #expect(try log.records(AuditQuery(events: [.authAttempt])).map(\.sequence) == [1, 3, 5, 7, 9])
        #expect(try log.records(AuditQuery(outcomes: [.success])).map(\.sequence) == [2, 4, 6, 8])
        #expect(try log.records(AuditQuery(outcomes: [.failure, .denied])).map(\.sequence) == [1, 3, 5, 7, 9, 10])
        #expect(try log.records(AuditQuery(events: [.itemRead, .vaultLock])).count == 5)
        #expect(try log.records(AuditQuery(item: "a", events: [.itemRead], outcomes: [.denied])).map(\.sequence) == [10])
        #expect(try log.records(AuditQuery(events: [.sessionEnd])).isEmpty)
    }

    @Test("a limit keeps the most recent matching records in either order; count ignores it")
    func limitAndOrder() throws {
        let (fixture, start) = try minuteLog()
        let log = fixture.log
        #expect(try log.records(AuditQuery(limit: 3)).map(\.sequence) == [8, 9, 10])
        #expect(try log.records(AuditQuery(limit: 3, order: .newestFirst)).map(\.sequence) == [10, 9, 8])
        #expect(try log.records(AuditQuery(order: .newestFirst)).map(\.sequence) == Array((1...10).reversed()))
        #expect(try log.records(AuditQuery(events: [.authAttempt], limit: 2, order: .newestFirst)).map(\.sequence) == [9, 7])
        #expect(try log.records(AuditQuery(since: start.addingTimeInterval(300), limit: 2)).map(\.sequence) == [9, 10])
        #expect(try log.records(AuditQuery(limit: 0)).isEmpty)
        #expect(try log.records(AuditQuery(limit: -5)).isEmpty)
        #expect(try log.records(AuditQuery(limit: 50)).count == 10)
        #expect(try log.count() == 10)
        #expect(try log.count(AuditQuery(events: [.authAttempt], limit: 2)) == 5)
        #expect(try log.count(AuditQuery(item: "b", outcomes: [.success])) == 2)
    }

    @Test("a name with SQL in it is only a value")
    func sqlInAName() throws {
        let fixture = try AuditFixture()
        try fixture.log.append(.itemRead, .success, item: "x' OR '1'='1", reason: "odd name")
        try fixture.log.append(.itemRead, .success, item: "y", reason: "plain")
        #expect(try fixture.log.records(AuditQuery(item: "x' OR '1'='1")).map(\.item) == ["x' OR '1'='1"])
        #expect(try fixture.log.records(AuditQuery(item: "' OR 1=1 --")).isEmpty)
    }

    @Test("forEachRecord streams the selection with every chain field and can stop early")
    func streaming() throws {
        let clock = AuditTestClock(Date(timeIntervalSince1970: 1_700_000_000.25))
        let fixture = try AuditFixture(clock: clock)
        try fixture.log.append(.itemRead, .success, vaultUser: "alice", item: "api \"token\"", reason: "match")
        try fixture.log.append(.vaultLock, .success)
        try fixture.log.append(.sessionEnd, .success, reason: "idle for 120 s")
        var seen: [AuditRecord] = []
        #expect(try fixture.log.forEachRecord { seen.append($0) } == 3)
        #expect(seen == (try fixture.log.records()))
        #expect(seen[0].unixTime == 1_700_000_000.25)
        #expect(seen[0].item == "api \"token\"")
        #expect(seen[1].previousMAC == seen[0].mac)
        #expect(seen.allSatisfy { $0.mac.count == 32 && !$0.bootID.isEmpty })

        struct Stop: Error {}
        var first: [Int64] = []
        #expect(throws: Stop.self) {
            try fixture.log.forEachRecord(AuditQuery(order: .newestFirst)) { record in
                first.append(record.sequence)
                throw Stop()
            }
        }
        #expect(first == [3])
        #expect(try fixture.log.verify() == .intact(count: 3))
    }

    @Test("names and reasons are cleaned: no control characters, bounded length")
    func cleaning() throws {
        let fixture = try AuditFixture()
        let record = try fixture.log.append(.authAttempt, .failure, vaultUser: "al\nice",
                                            item: String(repeating: "n", count: 1000),
                                            reason: "line one\nline two" + String(repeating: "é", count: 500))
        #expect(record.vaultUser == "al\u{FFFD}ice")
        #expect(!record.reason.contains("\n"))
        #expect(record.reason.utf8.count <= AuditEntry.maximumReasonBytes)
        #expect(record.reason.hasSuffix("…"))
        #expect((record.item?.utf8.count ?? 0) <= AuditEntry.maximumNameBytes)
        #expect(try fixture.log.records().first == record)
        #expect(try fixture.log.verify() == .intact(count: 1))
    }
}
