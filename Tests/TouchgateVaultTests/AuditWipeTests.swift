import Foundation
import Testing
@testable import TouchgateVault

@Suite("A wiped audit trail is reported once a vault exists; restart records the loss")
struct AuditWipeTests {
    /// The detail of the `AuditError.wiped` `body` throws; records an issue for anything else.
    private func wipedDetail<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        switch thrownError(body) {
        case let AuditError.wiped(detail)?:
            #expect(AuditError.wiped(detail: detail).description.contains("touchgate repair"), sourceLocation: sourceLocation)
            return detail
        case let other:
            Issue.record("expected AuditError.wiped, got \(String(describing: other))", sourceLocation: sourceLocation)
            return nil
        }
    }

    @Test("records and head deleted, key kept: wiped, and the key is not replaced")
    func rowsAndHead() throws {
        let fixture = try StateFixture()
        let key = try Data(contentsOf: URL(fileURLWithPath: fixture.keyPath))
        try fixture.sqlite3("DELETE FROM audit; DELETE FROM auditHead")
        #expect(wipedDetail { try fixture.reopen() }?.contains("head row is missing") == true)
        // Everything that opens the log on its own says the same.
        _ = wipedDetail { try StateStore(database: fixture.database).state("policy.state") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.keyPath)) == key)
        #expect(try fixture.database.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM auditHead") } == 0)
        // The log already open keeps reporting it too.
        #expect(tamperDetail { try fixture.state.state("policy.state") }?.contains("missing") == true)
        #expect(brokenReason(try fixture.log.verify()).contains("head row is missing"))
    }

    @Test("records, head and audit.key deleted: wiped, and no new key is created")
    func rowsHeadAndKey() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("DELETE FROM audit; DELETE FROM auditHead")
        try FileManager.default.removeItem(atPath: fixture.keyPath)
        #expect(wipedDetail { try fixture.reopen() }?.contains("audit.key") == true)
        _ = wipedDetail { try StateStore(database: fixture.database).updateState("policy.state") { $0 = nil } }
        #expect(!FileManager.default.fileExists(atPath: fixture.keyPath))
    }

    @Test("only the records deleted, head kept: wiped")
    func rowsOnly() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("DELETE FROM audit")
        #expect(wipedDetail { try fixture.reopen() }?.contains("every audit record was deleted") == true)
    }

    @Test("the key file alone deleted while records remain: wiped")
    func keyOnly() throws {
        let fixture = try StateFixture()
        try FileManager.default.removeItem(atPath: fixture.keyPath)
        #expect(wipedDetail { try fixture.reopen() }?.contains("is missing") == true)
    }

    @Test("a vault just created, before its first record, opens normally")
    func freshVault() throws {
        let fixture = try VaultFixture()
        let log = try AuditLog(database: fixture.store.database, journal: .disabled)
        #expect(try log.verify() == .intact(count: 0))
        #expect(try StateStore(log: log).state("policy.state") == nil)
    }

    @Test("a vault created with its first record: both or neither")
    func createWithRecord() throws {
        let store = try TemporaryStore()
        let log = try AuditLog(database: store.database, journal: .disabled)
        try Vault.create(database: store.database, passphrase: secret("pw"), kdf: .minimum, owner: "alice",
                         log: log, recording: AuditEntry(event: .vaultInit, outcome: .success, vaultUser: "alice"))
        #expect(try log.records().map(\.event) == [.vaultInit])
        #expect(try log.verify() == .intact(count: 1))
        #expect(throws: VaultError.self) {
            try Vault.create(database: store.database, passphrase: secret("pw"), kdf: .minimum, owner: "alice",
                             log: log, recording: AuditEntry(event: .vaultInit, outcome: .success))
        }
        #expect(try log.count() == 1)
    }

    @Test("before any vault exists a wiped log is started afresh, as before")
    func noVault() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        try fixture.tamper("DELETE FROM audit; DELETE FROM auditHead")
        try FileManager.default.removeItem(atPath: fixture.log.keyPath)
        let fresh = try fixture.reopen()
        #expect(try fresh.verify() == .intact(count: 0))
        #expect(FileManager.default.fileExists(atPath: fresh.keyPath))
    }

    @Test("restart after a wipe: a new key, one integrity.failure record stating the loss, intact, state usable")
    func restart() throws {
        let fixture = try StateFixture()
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: fixture.keyPath))
        try fixture.sqlite3("DELETE FROM audit; DELETE FROM auditHead")
        try FileManager.default.removeItem(atPath: fixture.keyPath)
        let log = try AuditLog.restart(database: fixture.database, journal: .disabled, vaultUser: "alice",
                                       reason: "touchgate repair by alice")
        #expect(try log.verify() == .intact(count: 1))
        let record = try #require(try log.records().first)
        #expect(record.event == .integrityFailure)
        #expect(record.outcome == .error)
        #expect(record.vaultUser == "alice")
        #expect(record.reason.contains("was lost"))
        #expect(record.reason.contains("touchgate repair by alice"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.keyPath)) != oldKey)
        // The state as it is was adopted, and the log opens normally again.
        let reopened = try fixture.reopen()
        #expect(try reopened.verify() == .intact(count: 1))
        #expect(try StateStore(log: reopened).state("policy.state") == StateFixture.policyState)
        try reopened.append(.vaultUnlock, .success)
        #expect(try reopened.verify() == .intact(count: 2))
    }

    @Test("restart when the key is lost but records remain: they are discarded and numbering continues")
    func restartDiscards() throws {
        let fixture = try StateFixture()
        try FileManager.default.removeItem(atPath: fixture.keyPath)
        let log = try AuditLog.restart(database: fixture.database, journal: .disabled, reason: "key lost")
        let records = try log.records()
        #expect(records.map(\.sequence) == [3])
        #expect(records.first?.reason.contains("2 records that can no longer be verified were discarded") == true)
        #expect(try log.verify() == .intact(count: 1))
    }
}
