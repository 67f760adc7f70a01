import Foundation
import Testing
@testable import TouchgateVault

@Suite("Authenticated state: edits with sqlite3 are found on read, update and verify")
struct StateIntegrityTests {
    @Test("state written through touchgate reads back and verifies intact")
    func genuine() throws {
        let fixture = try StateFixture()
        #expect(try fixture.state.state("policy.state") == StateFixture.policyState)
        #expect(try fixture.state.state("policy.settings") == StateFixture.settings)
        #expect(try fixture.state.state("enrollment.generation") == StateFixture.generation)
        #expect(try fixture.log.verify() == .intact(count: 2))
        // A second process (its own log and connections) agrees.
        let other = StateStore(database: try TouchgateDatabase(location: fixture.location))
        #expect(try other.state("policy.state") == StateFixture.policyState)
    }

    @Test("each edit of the state is refused on read and update, writes nothing, and breaks verify", arguments: [
        // Reset a running lockout.
        #"UPDATE vault_state SET value = CAST('{"failures":0}' AS BLOB) WHERE key = 'policy.state'"#,
        // Loosen the settings.
        #"UPDATE vault_state SET value = CAST('{"lockoutThreshold":1000}' AS BLOB) WHERE key = 'policy.settings'"#,
        // Change the enrollment generation.
        "UPDATE vault_state SET value = x'0000000000000006' WHERE key = 'enrollment.generation'",
        // Flip the template-sealing marker.
        "UPDATE vault_meta SET templates_sealed = 0",
        // Delete a row.
        "DELETE FROM vault_state WHERE key = 'policy.state'",
        // Insert a row.
        "INSERT INTO vault_state (key, value, updated_at) VALUES ('policy.override', x'01', 0)",
        // Same bytes, another SQLite type.
        "UPDATE vault_state SET value = CAST(value AS TEXT) WHERE key = 'policy.settings'",
        // Rename a key.
        "UPDATE vault_state SET key = 'policy.state.old' WHERE key = 'policy.state'",
    ])
    func edits(sql: String) throws {
        let fixture = try StateFixture()
        try fixture.sqlite3(sql)
        let before = try fixture.rawState()

        let readDetail = tamperDetail { try fixture.state.state("policy.settings") }
        #expect(readDetail?.contains("edited outside touchgate") == true)
        var bodyRan = false
        _ = tamperDetail {
            try fixture.state.updateState("policy.state") { value in
                bodyRan = true
                value = Data("{}".utf8)
            }
        }
        #expect(!bodyRan, "the update body must not run on tampered state")
        // A fresh process sees the same, and an update through it writes nothing either.
        let fresh = StateStore(database: try TouchgateDatabase(location: fixture.location))
        _ = tamperDetail { try fresh.updateState("enrollment.generation") { $0 = nil } }
        #expect(try fixture.rawState() == before, "nothing may be written after a failed check")

        let reason = brokenReason(try fixture.log.verify())
        #expect(reason.contains("the lockout, settings or enrollment state, the passphrase, an enrolled print or an item was edited outside touchgate"))
        #expect(reason.contains("touchgate repair"))
    }

    @Test("a trigger added to rewrite the state inside touchgate's own writes is refused; reseal drops it")
    func trigger() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("""
            CREATE TRIGGER forget AFTER UPDATE ON vault_state WHEN NEW.key = 'policy.state' BEGIN
                UPDATE vault_state SET value = CAST('{"failures":0}' AS BLOB) WHERE key = 'policy.state';
            END
            """)
        let detail = tamperDetail {
            try fixture.state.updateState("policy.state") { $0 = Data(#"{"failures":3}"#.utf8) }
        }
        #expect(detail?.contains("trigger") == true && detail?.contains("forget") == true)
        #expect(try fixture.state.unverifiedState().values["policy.state"] == StateFixture.policyState)
        #expect(brokenReason(try fixture.log.verify()).contains("trigger"))

        try fixture.state.reseal(try fixture.state.unverifiedState().values)
        try fixture.state.updateState("policy.state") { $0 = Data(#"{"failures":3}"#.utf8) }
        #expect(try fixture.state.state("policy.state") == Data(#"{"failures":3}"#.utf8))
        #expect(try fixture.log.verify().isIntact)
    }

    @Test("editing updated_at alone is not an integrity failure (it is informational)")
    func updatedAt() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("UPDATE vault_state SET updated_at = 0")
        #expect(try fixture.state.state("policy.state") == StateFixture.policyState)
        #expect(try fixture.log.verify().isIntact)
    }

    @Test("an older copy of the state rows swapped back alone is found")
    func olderRowsAlone() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("CREATE TABLE saved AS SELECT * FROM vault_state")
        try fixture.state.updateState("policy.state") { $0 = Data(#"{"failures":3,"lockoutUntil":1800}"#.utf8) }
        try fixture.sqlite3("DELETE FROM vault_state; INSERT INTO vault_state SELECT * FROM saved; DROP TABLE saved")
        let detail = tamperDetail { try fixture.state.state("policy.state") }
        #expect(detail?.contains("do not match the digest") == true)
        #expect(brokenReason(try fixture.log.verify()).contains("edited outside touchgate"))
    }

    @Test("an older copy of the state rows and the audit head swapped back together is found while newer records remain")
    func olderRowsAndHead() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("CREATE TABLE savedState AS SELECT * FROM vault_state; CREATE TABLE savedHead AS SELECT * FROM auditHead")
        // The lockout goes on, and is audited, as the evaluator does.
        try fixture.log.atomically { tx in
            try tx.updateState("policy.state") { $0 = Data(#"{"failures":3,"lockoutUntil":1800}"#.utf8) }
            try tx.append(.lockoutStart, .denied, vaultUser: "alice", reason: "3 failures")
        }
        try fixture.sqlite3("""
            DELETE FROM vault_state; INSERT INTO vault_state SELECT * FROM savedState;
            DELETE FROM auditHead; INSERT INTO auditHead SELECT * FROM savedHead;
            DROP TABLE savedState; DROP TABLE savedHead
            """)
        let detail = tamperDetail { try fixture.state.state("policy.state") }
        #expect(detail?.contains("names record 2 but records up to 3 exist") == true)
        _ = tamperDetail { try fixture.state.updateState("policy.state") { $0 = nil } }
        #expect(!(try fixture.log.verify().isIntact))
    }

    @Test("removing audit records behind the head, or adding one, makes the state untrusted")
    func headNotAtLastRecord() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("DELETE FROM audit WHERE seq = 2")
        #expect(tamperDetail { try fixture.state.state("policy.state") }?.contains("ends at record 1") == true)

        let other = try StateFixture()
        try other.sqlite3("UPDATE auditHead SET mac = zeroblob(32)")
        #expect(tamperDetail { try other.state.state("policy.state") }?.contains("was altered") == true)

        let third = try StateFixture()
        try third.sqlite3("DELETE FROM auditHead")
        #expect(tamperDetail { try third.state.state("policy.state") }?.contains("is missing") == true)
    }

    @Test("appends, prunes and a second process carry the state digest forward")
    func carriedForward() throws {
        let fixture = try StateFixture()
        for index in 0..<5 { try fixture.log.append(.itemRead, .success, vaultUser: "alice", item: "i\(index)") }
        let second = try fixture.reopen()
        try second.append(.vaultLock, .success)
        try StateStore(log: second).updateState("policy.state") { $0 = Data("{}".utf8) }
        try fixture.log.append(.vaultUnlock, .success)
        #expect(try fixture.state.state("policy.state") == Data("{}".utf8))
        // Seven years on, every record is past the retention.
        let later = try AuditLog(database: fixture.database, journal: .disabled,
                                 now: { Date().addingTimeInterval(7 * 366 * 86_400) })
        #expect(try later.prune(before: Date().addingTimeInterval(60)) == 9)
        #expect(try fixture.state.state("policy.settings") == StateFixture.settings)
        #expect(try fixture.log.verify() == .intact(count: 1))
    }

    @Test("clearing the digest of a current head does not pass it off as an old-format head")
    func noDowngrade() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("UPDATE auditHead SET stateDigest = NULL")
        #expect(tamperDetail { try fixture.state.state("policy.state") }?.contains("altered") == true)
        #expect(brokenReason(try fixture.reopen().verify()).contains("altered"))
    }

    /// Rewrites the head in the first format (no digest, `TGAUDS01` MAC), as a release
    /// before authenticated state left it.
    private func makeFirstFormatHead(_ fixture: AuditFixture) throws {
        let head = try #require(try fixture.database.writer.read { db in try AuditHead.fetch(db) } ?? nil)
        let old = AuditHead(headSequence: head.headSequence, headMAC: head.headMAC, anchorSequence: head.anchorSequence,
                            anchorMAC: head.anchorMAC, stateDigest: nil, key: fixture.log.key)
        try fixture.tamper("UPDATE auditHead SET stateDigest = NULL, mac = ?", arguments: [Data(old.mac)])
    }

    @Test("a head of the first format is upgraded once, adopting the state as found, and says so")
    func upgrade() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        try StateStore(log: fixture.log).updateState("policy.state") { $0 = Data("{\"failures\":1}".utf8) }
        try makeFirstFormatHead(fixture)
        // Edited before the upgrade: trust on first use adopts it.
        try fixture.tamper("UPDATE vault_state SET value = CAST('{\"failures\":0}' AS BLOB)")
        #expect(tamperDetail { try StateStore(log: fixture.log).state("policy.state") }?.contains("older release") == true)

        let upgraded = try fixture.reopen()
        let records = try upgraded.records()
        #expect(records.count == 4)
        #expect(records.last?.event == .auditUpgrade)
        #expect(records.last?.reason.contains("trust on first use") == true)
        #expect(try upgraded.verify() == .intact(count: 4))
        #expect(try StateStore(log: upgraded).state("policy.state") == Data("{\"failures\":0}".utf8))
        // Once only.
        #expect(try fixture.reopen().count() == 4)
    }

    @Test("a first-format head that does not name the last record is not upgraded")
    func noUpgradeOfStaleHead() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        try makeFirstFormatHead(fixture)
        try fixture.tamper("DELETE FROM audit WHERE seq = 3")
        let reopened = try fixture.reopen()
        #expect(try reopened.count() == 2)
        #expect(brokenReason(try reopened.verify()).contains("tail was removed"))
        #expect(tamperDetail { try StateStore(log: reopened).state("policy.state") } != nil)
    }
}

/// One decision, one commit: a state change and the records made with it (what the
/// policy core's `update(_:thenRecord:)` asks of the vault) are saved together or not at
/// all, and an update that changes nothing writes nothing.
@Suite("State and its records: one transaction per decision")
struct StateWithRecordsTests {
    @Test("the records appended with a state change commit with it, and a failure after them saves neither")
    func changeAndRecordsAreOne() throws {
        let fixture = try StateFixture()
        let changed = Data(#"{"failures":3}"#.utf8)
        try fixture.state.updateState("policy.state", { $0 = changed }) { transaction, _ in
            try transaction.append(.authAttempt, .failure, reason: "no match")
        }
        #expect(try fixture.state.state("policy.state") == changed)
        #expect(try fixture.log.verify() == .intact(count: 3))

        struct Refused: Error {}
        let before = try fixture.rawState()
        #expect(throws: Refused.self) {
            try fixture.state.updateState("policy.state", { $0 = Data(#"{"failures":0}"#.utf8) }) { transaction, _ in
                try transaction.append(.authAttempt, .success, reason: "a record whose decision failed")
                throw Refused()
            }
        }
        #expect(try fixture.rawState() == before, "the state changed without its record")
        #expect(try fixture.log.verify() == .intact(count: 3), "a record was kept without its state change")
    }

    @Test("an update that would change nothing still checks the state first: an edit with sqlite3 is refused, not skipped")
    func unchangedUpdateStillChecks() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3(#"UPDATE vault_state SET value = CAST('{"failures":0}' AS BLOB) WHERE key = 'policy.state'"#)
        let before = try fixture.rawState()
        var bodyRan = false
        let detail = tamperDetail {
            try fixture.state.updateState("policy.state", { _ in bodyRan = true }) { transaction, _ in
                try transaction.append(.authAttempt, .success, reason: "a record after an unchanged state")
            }
        }
        #expect(detail?.contains("edited outside touchgate") == true)
        #expect(!bodyRan)
        #expect(try fixture.rawState() == before)
    }

    @Test("an update that leaves the value as it was writes no page: the database file and its WAL are untouched")
    func unchangedWritesNothing() throws {
        let fixture = try StateFixture()
        let before = try fixture.rawState()
        var walBefore = stat(), walAfter = stat()
        _ = stat(fixture.location.databasePath + "-wal", &walBefore)
        let result = try fixture.state.updateState("policy.state") { value in value?.count ?? 0 }
        #expect(result == StateFixture.policyState.count)
        _ = stat(fixture.location.databasePath + "-wal", &walAfter)
        #expect(walAfter.st_size == walBefore.st_size && walAfter.st_mtim.tv_nsec == walBefore.st_mtim.tv_nsec
                    && walAfter.st_mtim.tv_sec == walBefore.st_mtim.tv_sec, "the WAL was written")
        #expect(try fixture.rawState() == before)
        #expect(try fixture.log.verify() == .intact(count: 2))
    }
}
