import Foundation
import Testing
@testable import TouchgateVault
import TouchgateBasics
import TouchgateTestSupport

/// The vault bound to a TPM, against swtpm started by each test on a Unix socket.
/// Serialized: the TPM a process uses is `TOUCHGATE_TPM_TCTI`, set per test.
@Suite("TPM binding", .serialized)
final class TPMBindingTests {
    let tpm: SwtpmRig
    let fixture: StateFixture

    init() throws {
        tpm = try SwtpmRig()
        setenv("TOUCHGATE_TPM_TCTI", tpm.tcti, 1)
        fixture = try StateFixture()
    }

    deinit {
        unsetenv("TOUCHGATE_TPM_TCTI")
    }

    var vault: Vault { fixture.vault.vault }
    var device: TPMDevice { .configured }

    private func bind() throws -> RecoveryKey {
        try vault.bindToTPM(passphrase: secret(VaultFixture.passphrase), device: device, log: fixture.log)
    }

    /// A copy of the data directory as it is now: the database (`VACUUM INTO`, with the WAL's
    /// commits) and the key files beside it.
    private func copyOfStore() throws -> StoreLocation {
        let copy = StoreLocation(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("touchgate-tpm-copy-\(UUID().uuidString)"))
        try FileManager.default.createDirectory(at: copy.directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        for file in try FileManager.default.contentsOfDirectory(atPath: fixture.location.directory.path)
        where !file.hasPrefix("touchgate.sqlite") && !file.hasPrefix("backup") {
            try FileManager.default.copyItem(atPath: fixture.location.directory.appendingPathComponent(file).path,
                                             toPath: copy.directory.appendingPathComponent(file).path)
        }
        let queue = try DatabaseQueue(path: fixture.location.databasePath)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [copy.databasePath]) }
        try queue.close()
        chmod(copy.databasePath, 0o600)
        return copy
    }

    @Test("bound: the passphrase unlocks through the TPM; the copy's wrapping alone no longer opens it; a new passphrase reseals")
    func enrollAndUnlock() throws {
        let before = try fixture.vault.store.blob("SELECT wrapped_vault_key FROM vault_meta")
        let recovery = try bind()
        #expect(String(describing: recovery) == "RecoveryKey(hidden)")
        let key = try vault.unlock(passphrase: secret(VaultFixture.passphrase))
        #expect(key.bytes.constantTimeEquals(fixture.vault.key.bytes))
        #expect(try fixture.vault.store.blob("SELECT wrapped_vault_key FROM vault_meta") != before)
        // The status names the counter, equal on both sides, and the TPM's lockout settings.
        let status = try vault.tpmStatus(device: device, log: try fixture.reopen())
        #expect(status.bound && status.storeCounter != nil && status.storeCounter == status.tpmCounter, "\(status)")
        #expect(status.dictionaryAttack?.maximumFailures ?? 0 > 0)
        // Bound twice is refused; nothing changes.
        #expect(throws: VaultError.self) { _ = try self.bind() }
        // A new passphrase: the old one is refused by the TPM, the new one opens.
        try vault.changePassphrase(from: secret(VaultFixture.passphrase), to: secret("another passphrase"))
        #expect(throws: VaultError.wrongPassphrase) { try self.vault.unlock(passphrase: secret(VaultFixture.passphrase)) }
        #expect(try vault.unlock(passphrase: secret("another passphrase")).bytes.constantTimeEquals(fixture.vault.key.bytes))
        let events = try fixture.reopen().records().map(\.event)
        #expect(events.contains(.tpmEnroll))
    }

    @Test("wrong passphrases count on the vault's own guard, never on the TPM's machine-wide counter; at ten only the recovery key opens it")
    func guardLimit() throws {
        let recovery = try bind()
        let limit = Int(TPMBinding.guardLimit)
        for attempt in 1..<limit {
            #expect(throws: VaultError.wrongPassphrase, "attempt \(attempt)") {
                try self.vault.unlock(passphrase: secret("guess \(attempt)"))
            }
        }
        // The right one before the limit sets the count back to zero.
        _ = try vault.unlock(passphrase: secret(VaultFixture.passphrase))
        var status = try vault.tpmStatus(device: device, log: fixture.log)
        #expect(status.guardFailures == 0 && status.guardLimit == limit, "\(status)")
        for attempt in 1...limit {
            do {
                _ = try vault.unlock(passphrase: secret("guess \(attempt)"))
                Issue.record("guess \(attempt) opened the vault")
            } catch VaultError.wrongPassphrase {
                #expect(attempt < limit, "guess \(attempt)")
            } catch let VaultError.tpmLockedOut(message) {
                #expect(attempt == limit && message.contains("recovery key"), "guess \(attempt): \(message)")
            }
        }
        status = try vault.tpmStatus(device: device, log: fixture.log)
        #expect(status.guardFailures == limit, "\(status)")
        // Not one of those reached the TPM's machine-wide dictionary-attack counter.
        #expect(try device.dictionaryAttackState().failures == 0)
        var refusal: VaultError?
        do { _ = try vault.unlock(passphrase: secret(VaultFixture.passphrase)) } catch let error as VaultError { refusal = error }
        guard case let .tpmLockedOut(message)? = refusal else {
            Issue.record("the right passphrase after the limit gave \(String(describing: refusal))")
            return
        }
        #expect(message.contains("after \(limit) wrong") && message.contains("touchgate tpm recover"), "\(message)")
        // The recovery key binds it again, under a new guard; the old one is gone from the TPM.
        let oldGuard = try #require(status.guardIndex)
        try vault.recoverTPM(recoveryKey: recovery, passphrase: secret("new one"), device: device, log: fixture.log)
        #expect(try vault.unlock(passphrase: secret("new one")).bytes.constantTimeEquals(fixture.vault.key.bytes))
        let recovered = try vault.tpmStatus(device: device, log: fixture.log)
        #expect(recovered.guardIndex != nil && recovered.guardFailures == 0, "\(recovered)")
        #expect(throws: TPMError.self) { _ = try self.device.guardStatus(oldGuard) }
    }

    @Test("one vault's wrong passphrases leave another vault on the same TPM opening; the TPM's own lockout stops neither")
    func guardsAreSeparate() throws {
        _ = try bind()
        let other = try StateFixture()
        _ = try other.vault.vault.bindToTPM(passphrase: secret(VaultFixture.passphrase), device: device, log: other.log)
        try tpm.setDictionaryAttack(tries: 3, interval: 1000)
        for attempt in 1...Int(TPMBinding.guardLimit) {
            #expect(throws: VaultError.self, "attempt \(attempt)") { try self.vault.unlock(passphrase: secret("guess \(attempt)")) }
        }
        #expect(try other.vault.vault.unlock(passphrase: secret(VaultFixture.passphrase)).bytes
            .constantTimeEquals(other.vault.key.bytes))
        // Something else trips the TPM's machine-wide lockout (a DA-counted index, wrong auth).
        try tpm.tool("tpm2_nvdefine", ["0x01500010", "-C", "o", "-s", "8", "-a", "authread|authwrite", "-p", "right"])
        for _ in 0..<3 { try? tpm.tool("tpm2_nvread", ["0x01500010", "-C", "0x01500010", "-P", "wrong"]) }
        #expect(try device.dictionaryAttackState().isLockedOut)
        #expect(try other.vault.vault.unlock(passphrase: secret(VaultFixture.passphrase)).bytes
            .constantTimeEquals(other.vault.key.bytes))
        #expect(try vault.tpmStatus(device: device, log: fixture.log).guardFailures == Int(TPMBinding.guardLimit))
    }

    @Test("a software TPM started in the bound one's place, its counter raised to an older copy's value, is refused")
    func standInTPMRefused() throws {
        _ = try bind()
        let copy = try copyOfStore()
        defer { try? FileManager.default.removeItem(at: copy.directory) }
        let expected = try #require(try vault.tpmStatus(device: device, log: fixture.log).storeCounter)
        for index in 0..<3 { try fixture.log.append(.itemRead, .success, vaultUser: "alice", reason: "use \(index)") }
        // The stand-in: a counter at the same index, with the same key (from audit.key), at the copy's value.
        let standIn = try SwtpmRig()
        let fake = TPMDevice(tcti: standIn.tcti)
        let auth = try AuditLog(database: try TouchgateDatabase(location: copy), checkingTPMCounter: false).tpmCounterAuth
        let (index, _) = try fake.defineCounter(auth: auth)
        #expect(index == (try vault.tpmStatus(device: device, log: fixture.log).counterIndex))
        #expect(try fake.counter(index, auth: auth, advancingTo: expected) == expected)
        setenv("TOUCHGATE_TPM_TCTI", standIn.tcti, 1)
        defer { setenv("TOUCHGATE_TPM_TCTI", tpm.tcti, 1) }
        var refusal: (any Error)?
        do { _ = try AuditLog(database: try TouchgateDatabase(location: copy), journal: .disabled) } catch { refusal = error }
        guard case let VaultError.tpm(message)? = refusal else {
            Issue.record("the copy against a stand-in TPM gave \(String(describing: refusal))")
            return
        }
        #expect(message.contains("not the TPM this vault is bound to"), "\(message)")
    }

    @Test("after an unclean TPM restart the first open adopts the counter; a copy put back after that is refused")
    func copyAfterPowerLossRefused() throws {
        _ = try bind()
        let copy = try copyOfStore()
        defer { try? FileManager.default.removeItem(at: copy.directory) }
        for index in 0..<5 { try fixture.log.append(.itemRead, .success, vaultUser: "alice", reason: "use \(index)") }
        tpm.kill9()
        try tpm.start()
        let reopened = try fixture.reopen()
        #expect(try reopened.records().last?.event == .tpmCounter)
        let status = try vault.tpmStatus(device: device, log: reopened)
        #expect(status.adoptedAt != nil && (status.adoptedChanges ?? 0) > 0, "\(status)")
        // Five changes older: within the TPM's orderly count, but the counter moved since the boot.
        var detail: String?
        do {
            _ = try AuditLog(database: try TouchgateDatabase(location: copy), journal: .disabled)
        } catch let IntegrityError.rolledBack(found) {
            detail = found
        }
        #expect(detail?.contains("older than the TPM's counter") == true, "\(detail ?? "the copy was adopted")")
    }

    @Test("the power-loss rule: only right after an unclean boot, only back to the TPM's last save")
    func powerLossRule() {
        let unclean = TPMBootInfo(orderly: false, resetCount: 3, restartCount: 0, orderlyCount: 255)
        #expect(PowerLoss(boot: unclean, counter: 0x1FF).explains(expected: 0x1FF - 6))
        #expect(PowerLoss(boot: unclean, counter: 0x1FF).explains(expected: 0x100))
        #expect(!PowerLoss(boot: unclean, counter: 0x1FF).explains(expected: 0xFF), "older than the last save")
        #expect(!PowerLoss(boot: unclean, counter: 0x205).explains(expected: 0x200), "the counter moved since the boot")
        #expect(!PowerLoss(boot: unclean, counter: 0x1FF).explains(expected: 0x1FF), "nothing to adopt")
        let orderly = TPMBootInfo(orderly: true, resetCount: 3, restartCount: 0, orderlyCount: 255)
        #expect(!PowerLoss(boot: orderly, counter: 0x1FF).explains(expected: 0x1FE))
    }

    @Test("a copy taken before a lockout, put back afterwards, is refused as rolled back; so is one from before an item was destroyed")
    func rollbackRefused() throws {
        _ = try bind()
        try vault.setItem(named: "bound", value: secret("b"), policy: "biometryCurrentSet", freshTouch: false,
                          enrollmentDigest: [1], key: fixture.vault.key)
        let beforeLockout = try copyOfStore()
        defer { try? FileManager.default.removeItem(at: beforeLockout.directory) }
        try fixture.state.updateState("policy.state") { $0 = Data(#"{"failures":3,"lockoutUntil":99999}"#.utf8) }
        try fixture.log.append(.lockoutStart, .denied, vaultUser: "alice", reason: "3 failures")
        let beforeDestruction = try copyOfStore()
        defer { try? FileManager.default.removeItem(at: beforeDestruction.directory) }
        #expect(try vault.destroyKeys(currentEnrollmentDigest: [2]) == ["bound"])

        for (what, copy) in [("before the lockout", beforeLockout), ("before the destruction", beforeDestruction)] {
            var detail: String?
            do {
                _ = try AuditLog(database: try TouchgateDatabase(location: copy), journal: .disabled)
            } catch let IntegrityError.rolledBack(found) {
                detail = found
            }
            #expect(detail?.contains("older than the TPM's counter") == true, "\(what): \(detail ?? "opened")")
            #expect(detail?.contains("touchgate repair") == true)
        }
        // The genuine store still opens, and a fresh copy of it too.
        _ = try fixture.reopen()
        let current = try copyOfStore()
        defer { try? FileManager.default.removeItem(at: current.directory) }
        _ = try AuditLog(database: try TouchgateDatabase(location: current), journal: .disabled)
    }

    @Test("the trail cut back to an older seal with its head and state, nothing else changed, is refused when bound")
    func cutTailRefused() throws {
        _ = try bind()
        let copy = try copyOfStore()
        defer { try? FileManager.default.removeItem(at: copy.directory) }
        // Failures and their records: exactly what cutting the tail back would undo.
        try fixture.state.updateState("policy.state") { $0 = Data(#"{"failures":2}"#.utf8) }
        for index in 0..<3 { try fixture.log.append(.authAttempt, .failure, vaultUser: "alice", reason: "no match \(index)") }
        let queue = try DatabaseQueue(path: fixture.location.databasePath)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS old", arguments: [copy.databasePath])
            try db.inTransaction {
                try db.execute(sql: """
                    DELETE FROM vault_state; INSERT INTO vault_state SELECT * FROM old.vault_state;
                    DELETE FROM audit; INSERT INTO audit SELECT * FROM old.audit;
                    DELETE FROM auditHead; INSERT INTO auditHead SELECT * FROM old.auditHead;
                    DELETE FROM auditSeal; INSERT INTO auditSeal SELECT * FROM old.auditSeal;
                    """)
                return .commit
            }
            try db.execute(sql: "DETACH DATABASE old")
        }
        try queue.close()
        // Consistent in itself (verify by the key passes), but behind the TPM.
        var refused = false
        do { _ = try fixture.reopen() } catch IntegrityError.rolledBack { refused = true }
        #expect(refused)
    }

    @Test("another audit.key than the counter was made with is named as such, not as a wrong passphrase")
    func foreignAuditKey() throws {
        _ = try bind()
        let keyPath = fixture.keyPath
        let genuine = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        try Data(repeating: 7, count: genuine.count).write(to: URL(fileURLWithPath: keyPath))
        chmod(keyPath, 0o600)
        defer {
            try? genuine.write(to: URL(fileURLWithPath: keyPath))
            chmod(keyPath, 0o600)
        }
        var refusal: (any Error)?
        do { _ = try fixture.reopen() } catch { refusal = error }
        guard case let VaultError.tpm(message)? = refusal else {
            Issue.record("another audit.key gave \(String(describing: refusal))")
            return
        }
        #expect(message.contains("counter key") && message.contains("audit.key"), "\(message)")
    }

    @Test("two writers at once, each with its own log, never leave the TPM past the store or behind it")
    func concurrentWriters() async throws {
        _ = try bind()
        let logs = try (0..<2).map { _ in try fixture.reopen() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (writer, log) in logs.enumerated() {
                group.addTask {
                    for index in 0..<15 {
                        try log.append(.itemRead, .success, vaultUser: "alice", reason: "writer \(writer), \(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
        let status = try vault.tpmStatus(device: device, log: try fixture.reopen())
        #expect(status.storeCounter != nil && status.storeCounter == status.tpmCounter, "\(status)")
    }

    @Test("power loss: the counter's jump is adopted and audited; an orderly restart needs nothing; kill -9 between commit and increment is caught up")
    func powerLoss() throws {
        _ = try bind()
        for index in 0..<5 { try fixture.log.append(.itemRead, .success, vaultUser: "alice", reason: "use \(index)") }
        tpm.kill9()
        try tpm.start()
        let reopened = try fixture.reopen()
        let last = try #require(try reopened.records().last)
        #expect(last.event == .tpmCounter && last.reason.contains("power loss"), "\(last.reason)")
        let status = try vault.tpmStatus(device: device, log: reopened)
        #expect(status.storeCounter == status.tpmCounter, "\(status)")
        // An orderly shutdown keeps the counter where it was: nothing to adopt.
        let count = try reopened.records().count
        try tpm.shutDownOrderly()
        try tpm.start()
        let again = try fixture.reopen()
        #expect(try again.records().count == count)
        // A store ahead of the TPM (the increment after a commit never happened) is caught up.
        try fixture.database.writer.write { db in
            let head = try #require(try AuditHead.fetch(db) ?? nil)
            _ = try TPMCounter.advance(db)
            try again.saveState(db, head: head)
        }
        let caughtUp = try vault.tpmStatus(device: device, log: try fixture.reopen())
        #expect(caughtUp.storeCounter == caughtUp.tpmCounter, "\(caughtUp)")
    }

    @Test("a store moved to another TPM is refused, and the recovery key binds it to the new one with a new passphrase")
    func movedAndRecovered() throws {
        let recovery = try bind()
        let text = recovery.text()
        #expect(text.count == 71)
        // Another machine's TPM: a fresh swtpm.
        let other = try SwtpmRig()
        setenv("TOUCHGATE_TPM_TCTI", other.tcti, 1)
        var refusal: (any Error)?
        do { _ = try vault.unlock(passphrase: secret(VaultFixture.passphrase)) } catch { refusal = error }
        guard case let VaultError.tpm(message)? = refusal else {
            Issue.record("unlock on another TPM gave \(String(describing: refusal))")
            return
        }
        #expect(message.contains("another TPM") || message.contains("cleared"), "\(message)")
        // A wrong recovery key changes nothing.
        let wrong = try #require(RecoveryKey(parsing: secret(String(repeating: "0", count: 64))))
        #expect(throws: VaultError.wrongPassphrase) {
            try self.vault.recoverTPM(recoveryKey: wrong, passphrase: secret("new one"), device: self.device, log: self.fixture.log)
        }
        #expect(RecoveryKey(parsing: secret("not a key")) == nil)
        let parsed = try #require(RecoveryKey(parsing: text))
        // A log opened before the move (a fresh one would meet the missing counter).
        try vault.recoverTPM(recoveryKey: parsed, passphrase: secret("new one"), device: device, log: fixture.log)
        #expect(try vault.unlock(passphrase: secret("new one")).bytes.constantTimeEquals(fixture.vault.key.bytes))
        #expect(try fixture.reopen().records().last?.event == .tpmRecover)
    }
}
