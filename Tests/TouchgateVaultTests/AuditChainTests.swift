import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit chain: tampering through plain SQL is found at the first bad record")
struct AuditChainTests {
    @Test("N appended records verify intact, gapless from 1")
    func appendAndVerify() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(25)
        #expect(try fixture.log.verify() == .intact(count: 25))
        let records = try fixture.log.records()
        #expect(records.map(\.sequence) == Array(1...25))
        #expect(records[0].previousMAC == [UInt8](repeating: 0, count: 32))
        for (earlier, later) in zip(records, records.dropFirst()) {
            #expect(later.previousMAC == earlier.mac)
        }
        #expect(records[0].uid == getuid())
        #expect(records[0].bootID.count == 36)
        #expect(records[0].bootTime > 0)
    }

    @Test("an empty log verifies intact")
    func emptyLog() throws {
        let fixture = try AuditFixture()
        #expect(try fixture.log.verify() == .intact(count: 0))
    }

    @Test("editing any field of record k breaks the chain at k", arguments: [
        "UPDATE audit SET reason = 'nothing to see' WHERE seq = ?",
        "UPDATE audit SET outcome = 'success' WHERE seq = ?",
        "UPDATE audit SET event = 'item.write' WHERE seq = ?",
        "UPDATE audit SET item = 'other-item' WHERE seq = ?",
        "UPDATE audit SET vaultUser = CASE WHEN vaultUser IS NULL THEN 'bob' ELSE NULL END WHERE seq = ?",
        "UPDATE audit SET item = CASE WHEN item IS NULL THEN 'x' ELSE NULL END WHERE seq = ?",
        "UPDATE audit SET wallTime = wallTime + 0.001 WHERE seq = ?",
        "UPDATE audit SET bootTime = bootTime - 60 WHERE seq = ?",
        "UPDATE audit SET uid = uid + 1 WHERE seq = ?",
        "UPDATE audit SET login = 'mallory' WHERE seq = ?",
        "UPDATE audit SET bootID = 'x' WHERE seq = ?",
        "UPDATE audit SET mac = zeroblob(32) WHERE seq = ?",
        "UPDATE audit SET prevMAC = zeroblob(32) WHERE seq = ?",
    ])
    func editField(sql: String) throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(12)
        try fixture.tamper(sql, arguments: [7])
        let result = try fixture.log.verify()
        guard case let .broken(at, _) = result else {
            Issue.record("edit not detected: \(result)")
            return
        }
        #expect(at == 7)
    }

    @Test("deleting record k is reported at k; later records are untouched")
    func deleteMiddle() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(10)
        try fixture.tamper("DELETE FROM audit WHERE seq = 4")
        #expect(try fixture.log.verify() == .broken(at: 4, reason: "record 4 is missing"))
    }

    @Test("deleting the first record is reported at 1")
    func deleteFirst() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(5)
        try fixture.tamper("DELETE FROM audit WHERE seq = 1")
        #expect(try fixture.log.verify().brokenAt == 1)
    }

    @Test("deleting record k and renumbering the rest to hide the gap is reported at k")
    func deleteAndRenumber() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(8)
        try fixture.tamper("DELETE FROM audit WHERE seq = 3")
        for seq in 4...8 {
            try fixture.tamper("UPDATE audit SET seq = seq - 1 WHERE seq = ?", arguments: [seq])
        }
        #expect(try fixture.log.verify().brokenAt == 3)
    }

    @Test("a forged record inserted in the middle is reported where it sits")
    func insertMiddle() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(8)
        for seq in (5...8).reversed() {
            try fixture.tamper("UPDATE audit SET seq = seq + 1 WHERE seq = ?", arguments: [seq])
        }
        // A copy of record 4 with another reason, linked to record 4's MAC.
        try fixture.tamper("""
            INSERT INTO audit (seq, wallTime, bootTime, bootID, uid, login, vaultUser, event, item, outcome, reason, prevMAC, mac)
            SELECT 5, wallTime, bootTime, bootID, uid, login, vaultUser, event, item, 'success', 'forged', mac, randomblob(32)
            FROM audit WHERE seq = 4
            """)
        #expect(try fixture.log.verify().brokenAt == 5)
    }

    @Test("a forged record appended after the last is reported at its seq")
    func insertAtEnd() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(6)
        try fixture.tamper("""
            INSERT INTO audit (seq, wallTime, bootTime, bootID, uid, login, vaultUser, event, item, outcome, reason, prevMAC, mac)
            SELECT 7, wallTime, bootTime, bootID, uid, login, vaultUser, 'item.read', 'payroll', 'success', 'forged', mac, randomblob(32)
            FROM audit WHERE seq = 6
            """)
        #expect(try fixture.log.verify().brokenAt == 7)
    }

    @Test("swapping two records is reported at the first of them")
    func swap() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(10)
        try fixture.tamper("UPDATE audit SET seq = -1 WHERE seq = 3")
        try fixture.tamper("UPDATE audit SET seq = 3 WHERE seq = 8")
        try fixture.tamper("UPDATE audit SET seq = 8 WHERE seq = -1")
        #expect(try fixture.log.verify().brokenAt == 3)
    }

    @Test("swapping two records' contents but keeping their seq is reported at the first")
    func swapContents() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(10)
        let columns = "wallTime, bootTime, bootID, uid, login, vaultUser, event, item, outcome, reason, prevMAC, mac"
        try fixture.tamper("CREATE TABLE saved AS SELECT seq, \(columns) FROM audit WHERE seq IN (5, 6)")
        for (target, source) in [(5, 6), (6, 5)] {
            try fixture.tamper("""
                UPDATE audit SET (\(columns)) = (SELECT \(columns) FROM saved WHERE seq = ?) WHERE seq = ?
                """, arguments: [source, target])
        }
        #expect(try fixture.log.verify().brokenAt == 5)
    }

    @Test("removing the tail is detected through the head row")
    func truncateTail() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(10)
        try fixture.tamper("DELETE FROM audit WHERE seq > 7")
        #expect(try fixture.log.verify() == .broken(at: 8, reason: "records 8…10 are missing: the tail was removed"))
    }

    @Test("removing only the last record is detected through the head row")
    func truncateLast() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(4)
        try fixture.tamper("DELETE FROM audit WHERE seq = 4")
        #expect(try fixture.log.verify().brokenAt == 4)
    }

    @Test("removing the tail and rewinding the head without the key is detected")
    func truncateAndRewindHead() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(10)
        try fixture.tamper("DELETE FROM audit WHERE seq > 7")
        try fixture.tamper("UPDATE auditHead SET headSeq = 7, headMAC = (SELECT mac FROM audit WHERE seq = 7)")
        #expect(try fixture.log.verify() == .broken(at: 1, reason: "the audit head row was altered"))
    }

    @Test("deleting the head row is detected")
    func deleteHead() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        try fixture.tamper("DELETE FROM auditHead")
        #expect(try fixture.log.verify() == .broken(at: 1, reason: "the audit head row is missing"))
    }

    @Test("appends after tampering keep the damage visible instead of repairing it")
    func appendAfterTamper() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(6)
        try fixture.tamper("DELETE FROM audit WHERE seq > 4")
        try fixture.log.append(.authAttempt, .failure, reason: "no match")
        let records = try fixture.log.records()
        #expect(records.last?.sequence == 7)
        #expect(try fixture.log.verify().brokenAt == 5)
    }

    @Test("a different key does not verify the log")
    func wrongKey() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        let other = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        try other.write(to: URL(fileURLWithPath: fixture.log.keyPath))
        chmod(fixture.log.keyPath, 0o600)
        #expect(try fixture.reopen().verify().brokenAt == 1)
    }

    @Test("separate instances on the same files share one chain")
    func reopenContinues() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        let second = try fixture.reopen()
        #expect(try second.append(.vaultLock, .success).sequence == 4)
        try fixture.appendSample(2)
        #expect(try second.verify() == .intact(count: 6))
    }
}

extension AuditVerification {
    /// The sequence of the first bad record, or nil when intact.
    var brokenAt: Int64? {
        if case let .broken(at, _) = self { return at }
        return nil
    }
}
