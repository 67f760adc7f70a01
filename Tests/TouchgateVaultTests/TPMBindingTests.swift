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

    @Test("wrong passphrases reach the TPM's lockout: the right one is then refused in plain words, and works after it")
    func dictionaryAttackLockout() throws {
        _ = try bind()
        try tpm.setDictionaryAttack(tries: 3, interval: 3)
        for attempt in 1...3 {
            #expect(throws: VaultError.wrongPassphrase, "attempt \(attempt)") {
                try self.vault.unlock(passphrase: secret("guess \(attempt)"))
            }
        }
        var refusal: VaultError?
        do { _ = try vault.unlock(passphrase: secret(VaultFixture.passphrase)) } catch let error as VaultError { refusal = error }
        guard case let .tpmLockedOut(message)? = refusal else {
            Issue.record("the right passphrase during a lockout gave \(String(describing: refusal))")
            return
        }
        #expect(message.contains("locked out") && message.contains("seconds"), "\(message)")
        let state = try device.dictionaryAttackState()
        #expect(state.isLockedOut && state.failures >= 3 && state.secondsUntilAccepting > 0, "\(state)")
        // One failure is forgotten every 3 s: the right passphrase works again.
        let deadline = Date().addingTimeInterval(20)
        var opened = false
        while !opened, Date() < deadline {
            sleep(1)
            opened = (try? vault.unlock(passphrase: secret(VaultFixture.passphrase))) != nil
        }
        #expect(opened)
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
