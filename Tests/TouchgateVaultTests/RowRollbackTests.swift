import Foundation
import Testing
@testable import TouchgateVault

/// An attacker with the files but no key puts back older genuine rows, copied from a
/// backup of the same store (with sqlite3's ATTACH): each must be refused, in personal
/// mode and without a TPM, because the audit head covers every item's version, the
/// passphrase wrapping and the state together.
@Suite("Row rollback")
struct RowRollbackTests {
    /// A copy of the store as it is now (`VACUUM INTO`, which includes the WAL's commits).
    private func backup(_ fixture: StateFixture) throws -> String {
        let path = fixture.vault.store.location.directory.appendingPathComponent("backup-\(UUID().uuidString).sqlite").path
        let queue = try DatabaseQueue(path: fixture.location.databasePath)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [path]) }
        try queue.close()
        return path
    }

    /// Runs `sql` with the backup attached as `old`, in one transaction, as sqlite3 would.
    private func restore(_ fixture: StateFixture, from backup: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: fixture.location.databasePath)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS old", arguments: [backup])
            try db.inTransaction { try db.execute(sql: sql); return .commit }
            try db.execute(sql: "DETACH DATABASE old")
        }
        try queue.close()
    }

    private func store(_ fixture: StateFixture, _ name: String, _ value: String, policy: String = "biometryAny") throws {
        try fixture.vault.vault.setItem(named: name, value: secret(value), policy: policy, freshTouch: false,
                                        enrollmentDigest: nil, key: fixture.vault.key)
    }

    private func read(_ fixture: StateFixture, _ name: String) throws -> String {
        string(try fixture.vault.vault.item(named: name, key: fixture.vault.key).value)
    }

    @Test("an older row of one item (earlier value or looser policy) is refused on read, and verify reports it")
    func olderItemRow() throws {
        let fixture = try StateFixture()
        try store(fixture, "token", "old value")
        let copy = try backup(fixture)
        // The owner tightens the item to the passphrase and changes its value.
        try store(fixture, "token", "new value", policy: "passphrase")
        try restore(fixture, from: copy, """
            DELETE FROM vault_item WHERE name = 'token';
            INSERT INTO vault_item SELECT * FROM old.vault_item WHERE name = 'token';
            """)
        let detail = tamperDetail { try read(fixture, "token") }
        #expect(detail?.contains("put back from an older copy") == true, "\(detail ?? "")")
        #expect(try fixture.vault.vault.itemInfo(named: "token")?.policy == "biometryAny")
        guard case let .broken(_, reason) = try fixture.reopen().verify() else {
            Issue.record("verify passed a rolled-back item")
            return
        }
        #expect(reason.contains("an item was edited outside touchgate or put back"), "\(reason)")
    }

    @Test("a deleted item brought back from a copy is refused")
    func deletedItemBack() throws {
        let fixture = try StateFixture()
        try store(fixture, "kept", "k")
        try store(fixture, "gone", "g")
        let copy = try backup(fixture)
        try fixture.vault.vault.deleteItem(named: "gone")
        try restore(fixture, from: copy, "INSERT INTO vault_item SELECT * FROM old.vault_item WHERE name = 'gone'")
        #expect(tamperDetail { try read(fixture, "gone") } != nil)
        // Every item, and every state read, is refused alike: the store as a whole is not the one last written.
        #expect(tamperDetail { try read(fixture, "kept") } != nil)
        #expect(tamperDetail { try fixture.state.state("policy.state") } != nil)
        // Taking the row out again restores the store exactly as touchgate left it.
        try fixture.sqlite3("DELETE FROM vault_item WHERE name = 'gone'")
        #expect(try read(fixture, "kept") == "k")
    }

    @Test("a destroyed item key put back is refused")
    func destroyedKeyBack() throws {
        let fixture = try StateFixture()
        try fixture.vault.vault.setItem(named: "bound", value: secret("b"), policy: "biometryCurrentSet",
                                        freshTouch: false, enrollmentDigest: [1, 2], key: fixture.vault.key)
        let copy = try backup(fixture)
        #expect(try fixture.vault.vault.destroyKeys(currentEnrollmentDigest: [3, 4]) == ["bound"])
        try restore(fixture, from: copy, """
            UPDATE vault_item SET wrapped_key = (SELECT wrapped_key FROM old.vault_item WHERE name = 'bound')
            WHERE name = 'bound'
            """)
        #expect(tamperDetail { try read(fixture, "bound") } != nil)
    }

    @Test("the state and audit tables rolled back together, while a newer item remains, are refused")
    func stateAndAuditBack() throws {
        let fixture = try StateFixture()
        let copy = try backup(fixture)
        // A lockout is recorded, then an item is stored.
        try fixture.state.updateState("policy.state") { $0 = Data(#"{"failures":3,"lockoutUntil":99999}"#.utf8) }
        try fixture.log.append(.lockoutStart, .denied, vaultUser: "alice", reason: "3 failures")
        try store(fixture, "newer", "n")
        try restore(fixture, from: copy, """
            DELETE FROM vault_state; INSERT INTO vault_state SELECT * FROM old.vault_state;
            DELETE FROM audit; INSERT INTO audit SELECT * FROM old.audit;
            DELETE FROM auditHead; INSERT INTO auditHead SELECT * FROM old.auditHead;
            DELETE FROM auditSeal; INSERT INTO auditSeal SELECT * FROM old.auditSeal;
            """)
        let detail = tamperDetail { try fixture.state.state("policy.state") }
        #expect(detail?.contains("put back from an older copy") == true, "\(detail ?? "")")
        #expect(tamperDetail { try read(fixture, "newer") } != nil)
        if case .intact = try fixture.reopen().verify() { Issue.record("verify passed a rolled-back state and trail") }
    }

    @Test("an older passphrase wrapping put back is refused before the old passphrase is of use")
    func olderPassphraseBack() throws {
        let fixture = try StateFixture()
        let copy = try backup(fixture)
        try fixture.vault.vault.changePassphrase(from: secret(VaultFixture.passphrase), to: secret("a new passphrase"))
        try restore(fixture, from: copy, """
            UPDATE vault_meta SET (kdf_salt, wrapped_vault_key) =
                (SELECT kdf_salt, wrapped_vault_key FROM old.vault_meta)
            """)
        #expect(tamperDetail { try fixture.state.state("policy.state") } != nil)
        if case .intact = try fixture.reopen().verify() { Issue.record("verify passed an older passphrase wrapping") }
    }

    @Test("a head of the first format is upgraded once to cover items, and audited")
    func firstFormatUpgrade() throws {
        let fixture = try StateFixture()
        try store(fixture, "token", "t")
        // Rewrite the head as a release before this one left it: the first format's digest.
        let log = fixture.log
        try fixture.database.writer.write { db in
            let head = try #require(try AuditHead.fetch(db) ?? nil)
            try head.with(stateDigest: try StateDigest.computeFirstFormat(db), key: log.key).save(db)
        }
        let reopened = try fixture.reopen()
        #expect(try read(fixture, "token") == "t")
        let last = try #require(try reopened.records().last)
        #expect(last.event == .auditUpgrade && last.reason.contains("every item's version"))
        #expect(try reopened.verify() == .intact(count: try reopened.records().count))
    }

    // MARK: Prints (issue 46)

    /// The fixture's prints, sealed under its vault key as touchgate stores them.
    private func prints(_ fixture: StateFixture) throws -> PrintStore {
        PrintStore(database: fixture.database, sealing: try fixture.vault.vault.templateSealing(key: fixture.vault.key))
    }

    private func enroll(_ fixture: StateFixture, _ finger: String, _ template: String) throws {
        try prints(fixture).save(StoredPrint(user: "alice", finger: finger, driver: "virtual_image", deviceID: "0",
                                             enrolledAt: Date(), onDevice: false, template: Array(template.utf8)),
                                 replace: true)
    }

    @Test("an older print row put back (a finger since re-enrolled) is refused, and verify reports it")
    func olderPrintRow() throws {
        let fixture = try StateFixture()
        try enroll(fixture, "right-index", "FP3 old right index")
        let copy = try backup(fixture)
        try enroll(fixture, "right-index", "FP3 new right index")
        try restore(fixture, from: copy, """
            UPDATE print SET template = (SELECT template FROM old.print WHERE finger = 'right-index')
            WHERE finger = 'right-index'
            """)
        let detail = tamperDetail { try fixture.state.state("policy.state") }
        #expect(detail?.contains("an enrolled print") == true && detail?.contains("put back from an older copy") == true,
                "\(detail ?? "")")
        #expect(tamperDetail { try prints(fixture).save(StoredPrint(user: "alice", finger: "left-index",
                                                                     driver: "virtual_image", deviceID: "0",
                                                                     enrolledAt: Date(), onDevice: false,
                                                                     template: Array("FP3 l".utf8)), replace: false) } != nil,
                "no print is written over a tampered store")
        guard case let .broken(_, reason) = try fixture.reopen().verify() else {
            Issue.record("verify passed a rolled-back print")
            return
        }
        #expect(reason.contains("an enrolled print"), "\(reason)")
    }

    @Test("a deleted print brought back from a copy is refused; taking it out again restores the store")
    func deletedPrintBack() throws {
        let fixture = try StateFixture()
        try enroll(fixture, "right-index", "FP3 right")
        try enroll(fixture, "left-thumb", "FP3 thumb")
        let copy = try backup(fixture)
        #expect(try prints(fixture).delete(user: "alice", finger: "left-thumb", driver: "virtual_image", deviceID: "0"))
        try restore(fixture, from: copy, "INSERT INTO print SELECT * FROM old.print WHERE finger = 'left-thumb'")
        #expect(tamperDetail { try fixture.state.state("policy.state") } != nil)
        try fixture.sqlite3("DELETE FROM print WHERE finger = 'left-thumb'")
        #expect(try fixture.state.state("policy.state") == StateFixture.policyState)
    }

    @Test("a print row deleted, or added from another store, is refused")
    func printDeletedOrAdded() throws {
        let fixture = try StateFixture()
        try enroll(fixture, "right-index", "FP3 right")
        try fixture.sqlite3("DELETE FROM print")
        #expect(tamperDetail { try fixture.state.state("policy.state") } != nil, "a deleted print")

        let other = try StateFixture()
        try enroll(other, "right-index", "FP3 right")
        let fresh = try StateFixture()
        try restore(fresh, from: try backup(other), "INSERT INTO print SELECT * FROM old.print")
        #expect(tamperDetail { try fresh.state.state("policy.state") } != nil, "a print copied from another store")
    }

    @Test("a head of the second format (no prints) is upgraded once to cover the prints, and audited")
    func secondFormatUpgrade() throws {
        let fixture = try StateFixture()
        try enroll(fixture, "right-index", "FP3 right")
        // Rewrite the head as the release before this one left it: the second format's digest.
        let log = fixture.log
        try fixture.database.writer.write { db in
            let head = try #require(try AuditHead.fetch(db) ?? nil)
            try head.with(stateDigest: try StateDigest.computeSecondFormat(db), key: log.key).save(db)
        }
        #expect(tamperDetail { try fixture.state.state("policy.state") } != nil, "not upgraded before an open")
        let reopened = try fixture.reopen()
        #expect(try fixture.state.state("policy.state") == StateFixture.policyState)
        let last = try #require(try reopened.records().last)
        #expect(last.event == .auditUpgrade && last.reason.contains("enrolled prints"), "\(last.reason)")
        #expect(try reopened.verify() == .intact(count: try reopened.records().count))
        // Once: the next open writes nothing, and a print put back is refused from now on.
        let count = try reopened.records().count
        #expect(try fixture.reopen().records().count == count)
        try fixture.sqlite3("UPDATE print SET onDevice = 1")
        #expect(tamperDetail { try fixture.state.state("policy.state") } != nil)
    }
}
