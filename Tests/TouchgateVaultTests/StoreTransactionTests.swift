import Foundation
import Testing
@testable import TouchgateVault

@Suite("One transaction for a change and its record")
struct StoreTransactionTests {
    private struct Abort: Error {}

    private func print(_ finger: String) -> StoredPrint {
        StoredPrint(user: "alice", finger: finger, driver: "virtual_image", deviceID: "0",
                    enrolledAt: Date(timeIntervalSince1970: 1_700_000_000), onDevice: false,
                    template: Array("FP3 \(finger)".utf8))
    }

    /// A fixture with an item bound to an enrollment digest and one sealed print.
    private func populated() throws -> (StateFixture, PrintStore) {
        let fixture = try StateFixture()
        let prints = PrintStore(database: fixture.database,
                                sealing: try fixture.vault.vault.templateSealing(key: fixture.vault.key))
        try prints.save(print("right-index"), replace: false)
        try fixture.vault.vault.setItem(named: "bound", value: secret("v1"), policy: "biometryCurrentSet",
                                        freshTouch: false, enrollmentDigest: [1], key: fixture.vault.key)
        return (fixture, prints)
    }

    /// Everything a transaction can touch, as stored.
    private func snapshot(_ fixture: StateFixture) throws -> [String] {
        try fixture.database.writer.read { db in
            try String.fetchAll(db, sql: """
                SELECT 'state ' || key || '=' || quote(value) FROM vault_state
                UNION ALL SELECT 'item ' || name || ' ' || quote(nonce) || ' ' || quote(wrapped_key) FROM vault_item
                UNION ALL SELECT 'print ' || finger || ' ' || quote(template) FROM print
                UNION ALL SELECT 'audit ' || seq FROM audit
                UNION ALL SELECT 'head ' || headSeq || quote(mac) FROM auditHead
                UNION ALL SELECT 'meta ' || quote(wrapped_vault_key) FROM vault_meta
                ORDER BY 1
                """)
        }
    }

    @Test("when the body throws, state, items, prints, passphrase and the audit record are all rolled back")
    func rollback() throws {
        let (fixture, prints) = try populated()
        let vault = fixture.vault.vault
        let change = try vault.preparePassphraseChange(from: secret(VaultFixture.passphrase), to: secret("new"))
        let before = try snapshot(fixture)
        #expect(throws: Abort.self) {
            try fixture.log.atomically { tx in
                try tx.updateState("enrollment.generation") { $0 = Data([0, 0, 0, 0, 0, 0, 0, 8]) }
                try tx.save(print("left-index"), replace: false, in: prints)
                try tx.deletePrint(user: "alice", finger: "right-index", driver: "virtual_image", deviceID: "0")
                #expect(try tx.destroyKeys(currentEnrollmentDigest: [2], in: vault) == ["bound"])
                try tx.setItem(named: "new", value: secret("x"), policy: "passphrase", freshTouch: false,
                               enrollmentDigest: nil, key: fixture.vault.key, expecting: .absent, in: vault)
                try tx.changePassphrase(change, in: vault)
                try tx.append(.fingerEnroll, .success, vaultUser: "alice", reason: "left-index")
                #expect(try tx.state("enrollment.generation") == Data([0, 0, 0, 0, 0, 0, 0, 8]))
                throw Abort()
            }
        }
        #expect(try snapshot(fixture) == before)
        #expect(try fixture.log.verify() == .intact(count: 2))
        _ = try vault.unlock(passphrase: secret(VaultFixture.passphrase))
    }

    @Test("when it commits, everything is there and the records reach journald after the commit, in order")
    func commit() throws {
        let socketDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("tg-tx-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: socketDirectory) }
        let journald = try TestDatagramSocket(directory: socketDirectory)
        let fixture = try StateFixture(journal: AuditJournal(socketPath: journald.path))
        _ = journald.receiveFields(); _ = journald.receiveFields()  // the fixture's two records
        let prints = PrintStore(database: fixture.database,
                                sealing: try fixture.vault.vault.templateSealing(key: fixture.vault.key))

        // A rolled-back append never reaches the journal.
        #expect(throws: Abort.self) {
            try fixture.log.atomically { tx in
                try tx.append(.fingerEnroll, .success, reason: "rolled back")
                throw Abort()
            }
        }
        let invalidated = try fixture.log.atomically { tx -> [String] in
            try tx.save(print("left-index"), replace: false, in: prints)
            #expect(try tx.prints(in: prints).map(\.template) == [Array("FP3 left-index".utf8)])
            try tx.updateState("enrollment.generation") { $0 = Data([0, 0, 0, 0, 0, 0, 0, 8]) }
            try tx.append(.fingerEnroll, .success, vaultUser: "alice", reason: "left-index")
            let names = try tx.destroyKeys(currentEnrollmentDigest: [8], in: fixture.vault.vault)
            try tx.append(.policyChange, .success, vaultUser: "alice", reason: "generation 8")
            return names
        }
        #expect(invalidated.isEmpty)
        #expect(try fixture.state.state("enrollment.generation") == Data([0, 0, 0, 0, 0, 0, 0, 8]))
        #expect(try prints.prints().map(\.finger) == ["left-index"])
        #expect(try fixture.log.verify() == .intact(count: 4))
        #expect(journald.receiveFields()?["TOUCHGATE_SEQ"] == "3")
        let second = journald.receiveFields()
        #expect(second?["TOUCHGATE_SEQ"] == "4")
        #expect(second?["TOUCHGATE_EVENT"] == "policy.change")
    }

    @Test("tampered state inside a transaction refuses it whole, the audit record included")
    func tamperedInside() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("UPDATE vault_state SET value = x'00' WHERE key = 'policy.state'")
        _ = tamperDetail {
            try fixture.log.atomically { tx in
                try tx.append(.authAttempt, .failure, vaultUser: "alice", reason: "no match")
                try tx.updateState("policy.state") { $0 = Data("{}".utf8) }
            }
        }
        #expect(try fixture.log.count() == 2)
        // Appending alone (outside the state) still works: the service records the failure.
        try fixture.log.append(.integrityFailure, .error, reason: "state tampered")
        #expect(try fixture.log.count() == 3)
    }

    @Test("compare-and-swap: .absent and a stale version are refused and write nothing; the current version wins")
    func compareAndSwap() throws {
        let fixture = try VaultFixture()
        let vault = fixture.vault
        let v1 = try vault.setItem(named: "token", value: secret("one"), policy: "biometryAny", freshTouch: false,
                                   enrollmentDigest: nil, key: fixture.key, expecting: .absent)
        #expect(try vault.itemInfo(named: "token")?.version == v1)
        #expect(try vault.items().first?.version == v1)
        #expect(ItemVersion(v1.description) == v1)
        #expect(ItemVersion("zz") == nil)

        #expect(throws: ConflictError.itemChanged(name: "token")) {
            try vault.setItem(named: "token", value: secret("two"), policy: "biometryAny", freshTouch: false,
                              enrollmentDigest: nil, key: fixture.key, expecting: .absent)
        }
        let v2 = try vault.setItem(named: "token", value: secret("two"), policy: "biometryAny", freshTouch: false,
                                   enrollmentDigest: nil, key: fixture.key, expecting: .version(v1))
        #expect(v2 != v1)
        // A writer that read v1 before the change above must not overwrite it.
        #expect(throws: ConflictError.itemChanged(name: "token")) {
            try vault.setItem(named: "token", value: secret("stale"), policy: "passphrase", freshTouch: true,
                              enrollmentDigest: nil, key: fixture.key, expecting: .version(v1))
        }
        #expect(throws: ConflictError.self) { try vault.deleteItem(named: "token", expecting: .version(v1)) }
        #expect(string(try vault.item(named: "token", key: fixture.key).value) == "two")
        // A version for an item that is gone fails too; a hand-built listing matches nothing.
        #expect(try vault.deleteItem(named: "token", expecting: .version(v2)))
        #expect(throws: ConflictError.self) {
            try vault.setItem(named: "token", value: secret("x"), policy: "p", freshTouch: false,
                              enrollmentDigest: nil, key: fixture.key, expecting: .version(v2))
        }
        let handMade = VaultItemInfo(name: "token", owner: "alice", policy: "p", freshTouch: false, enrollmentDigest: nil,
                                     isInvalidated: false, createdAt: Date(), updatedAt: Date())
        #expect(throws: ConflictError.self) { try vault.deleteItem(named: "token", expecting: .version(handMade.version)) }
        #expect(!ConflictError.itemChanged(name: "token").description.contains("two"))
    }

    @Test("a passphrase change prepared before another one landed is refused, its record with it")
    func passphraseCompareAndSwap() throws {
        let fixture = try StateFixture()
        let vault = fixture.vault.vault
        let first = try vault.preparePassphraseChange(from: secret(VaultFixture.passphrase), to: secret("first"))
        let second = try vault.preparePassphraseChange(from: secret(VaultFixture.passphrase), to: secret("second"))
        try fixture.log.atomically { tx in
            try tx.changePassphrase(first, in: vault)
            try tx.append(.passphraseChange, .success, vaultUser: "alice")
        }
        #expect(throws: VaultError.wrongPassphrase) {
            try fixture.log.atomically { tx in
                try tx.append(.passphraseChange, .success, vaultUser: "alice")
                try tx.changePassphrase(second, in: vault)
            }
        }
        #expect(try fixture.log.count() == 3)
        _ = try vault.unlock(passphrase: secret("first"))
        #expect(throws: VaultError.wrongPassphrase) { try vault.unlock(passphrase: secret("second")) }
    }

    @Test("many tasks doing read-check-write on one item with compare-and-swap lose no update")
    func concurrentItemWriters() async throws {
        let fixture = try VaultFixture()
        try fixture.vault.setItem(named: "counter", value: secret("0"), policy: "p", freshTouch: false,
                                  enrollmentDigest: nil, key: fixture.key)
        let other = try Vault.open(database: try TouchgateDatabase(location: fixture.store.location), owner: "alice")
        let tasks = 8, perTask = 10
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<tasks {
                let vault = index % 2 == 0 ? fixture.vault : other
                let key = fixture.key
                group.addTask {
                    var conflicts = 0
                    for _ in 0..<perTask {
                        while true {
                            let item = try vault.item(named: "counter", key: key)
                            let next = Int(string(item.value))! + 1
                            do {
                                try vault.setItem(named: "counter", value: secret(String(next)), policy: "p", freshTouch: false,
                                                  enrollmentDigest: nil, key: key, expecting: .version(item.info.version))
                                break
                            } catch is ConflictError {
                                conflicts += 1
                            }
                        }
                    }
                    return conflicts
                }
            }
            for try await _ in group {}
        }
        #expect(string(try fixture.vault.item(named: "counter", key: fixture.key).value) == String(tasks * perTask))
    }

    @Test("many tasks on two connection pools: every state update and its record land together")
    func concurrentTransactions() async throws {
        let fixture = try StateFixture()
        let second = try fixture.reopen()
        let tasks = 8, perTask = 10
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<tasks {
                let log = index % 2 == 0 ? fixture.log : second
                group.addTask {
                    for _ in 0..<perTask {
                        try log.atomically { tx in
                            let count = try tx.updateState("counter") { value -> UInt64 in
                                let next = (value.map { $0.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } } ?? 0) + 1
                                value = withUnsafeBytes(of: next) { Data($0) }
                                return next
                            }
                            try tx.append(.authAttempt, .failure, reason: "attempt \(count)")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let total = tasks * perTask
        #expect(try StateStoreTests.count(fixture.state, "counter") == UInt64(total))
        #expect(try fixture.log.verify() == .intact(count: 2 + total))
        let reasons = Set(try fixture.log.records().map(\.reason).filter { $0.hasPrefix("attempt ") })
        #expect(reasons.count == total, "each count recorded exactly once")
    }
}
