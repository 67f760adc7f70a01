import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit show and export")
struct AuditQueryTests {
    @Test("records(since:limit:) filters by wall time and keeps the most recent")
    func recordsSinceLimit() throws {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let clock = AuditTestClock(start)
        let fixture = try AuditFixture(clock: clock)
        for minute in 0..<10 {
            clock.now = start.addingTimeInterval(Double(minute) * 60)
            try fixture.log.append(.authAttempt, .failure, reason: "minute \(minute)")
        }
        #expect(try fixture.log.records(limit: 3).map(\.sequence) == [8, 9, 10])
        #expect(try fixture.log.records(since: start.addingTimeInterval(300)).map(\.sequence) == [6, 7, 8, 9, 10])
        #expect(try fixture.log.records(since: start.addingTimeInterval(300), limit: 2).map(\.sequence) == [9, 10])
        #expect(try fixture.log.records(limit: 0).isEmpty)
        #expect(try fixture.log.records()[4].time == start.addingTimeInterval(240))
        #expect(try fixture.log.count() == 10)
    }

    @Test("export writes one JSON object per record with stable keys and ISO-8601 UTC times")
    func export() throws {
        let clock = AuditTestClock(Date(timeIntervalSince1970: 1_700_000_000.25))
        let fixture = try AuditFixture(clock: clock)
        try fixture.log.append(.itemRead, .success, vaultUser: "alice", item: "api \"token\"", reason: "match")
        try fixture.log.append(.vaultLock, .success)
        var lines: [String] = []
        #expect(try fixture.log.exportJSONLines { lines.append($0) } == 2)
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.hasSuffix("}\n") && $0.dropLast().contains("\n") == false })
        let keys = ["seq", "time", "unixTime", "bootTime", "bootID", "uid", "login", "vaultUser",
                    "event", "item", "outcome", "reason", "prevMAC", "mac"]
        // Keys come in this fixed order.
        let positions = keys.map { lines[0].range(of: "\"\($0)\":")?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil })
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())

        let first = try #require(JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(Set(first.keys) == Set(keys))
        #expect(first["seq"] as? Int == 1)
        #expect(first["time"] as? String == "2023-11-14T22:13:20.250Z")
        #expect(first["item"] as? String == "api \"token\"")
        #expect(first["vaultUser"] as? String == "alice")
        #expect(first["event"] as? String == "item.read")
        #expect((first["mac"] as? String)?.count == 64)
        let second = try #require(JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(second["item"] is NSNull)
        #expect(second["prevMAC"] as? String == first["mac"] as? String)
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
