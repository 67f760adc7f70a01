import Foundation
import Testing
import TouchgateBasics
@testable import TouchgateVault

/// ``AuditLog/opened(in:)``: what a process that keeps the store open (touchgated, touchgate
/// agent) gets at each request instead of opening the log afresh. Its keys are read once,
/// but nothing a fresh open would catch or name may be lost.
@Suite("The audit log a long-lived host keeps open")
struct AuditOpenedTests {
    /// Appends one record through `opened(in:)` over a handle serving a caller named
    /// `process`, as the service opens the kept store for each request its gate admits.
    private func append(_ database: TouchgateDatabase, for process: String, item: String) async throws {
        let client = AuditClient(uid: UInt32(getuid()), loginName: UserDatabase.loginName(of: UInt32(getuid())), process: process)
        do {
            _ = try AuditLog.opened(in: database.serving(client)).append(.itemRead, .success, item: item, reason: "read")
        } catch {
            throw ServiceError(.error, "\(error)")
        }
    }

    @Test("each request's records name its own requester, and the signed seal goes on across them")
    func eachRequestNamesItsRequester() async throws {
        let fixture = try AuditFixture()
        try await append(fixture.database, for: "pid 11 /usr/bin/ssh-add", item: "a")
        try await append(fixture.database, for: "pid 22 /usr/bin/git", item: "b")
        let records = try fixture.log.records()
        #expect(records.map(\.reason) == ["read (via pid 11 /usr/bin/ssh-add)", "read (via pid 22 /usr/bin/git)"],
                "a kept log wrote the first requester's name into a later request's record")
        // Every append built on the seal the one before signed: the trail verifies with the
        // public key alone, sealed at its last record.
        #expect(try fixture.log.seal()?.sequence == 2)
        #expect(try fixture.log.verify() == .intact(count: 2))
    }

    @Test("a seal replaced with sqlite3 between two requests is not built on, though the last one signed it")
    func aReplacedSealIsCheckedAgain() async throws {
        let fixture = try AuditFixture()
        try await append(fixture.database, for: "first", item: "a")
        try await append(fixture.database, for: "second", item: "b")
        // The attacker keeps the genuine seal's fields but forges its signature.
        try fixture.tamper("UPDATE auditSeal SET signature = zeroblob(64)")
        try await append(fixture.database, for: "third", item: "c")
        #expect(try fixture.log.seal()?.sequence == 2, "a forged seal was signed over by the next append")
        guard case .broken = try fixture.log.verify() else {
            Issue.record("a forged seal verified")
            return
        }
    }

    @Test("a key file removed while the store stays open is seen at the next request, as at a fresh open")
    func aRemovedKeyFileIsSeen() async throws {
        let fixture = try AuditFixture()
        try await append(fixture.database, for: "first", item: "a")
        try FileManager.default.removeItem(atPath: AuditKey.path(in: fixture.location))
        await #expect(throws: ServiceError.self) {
            try await append(fixture.database, for: "second", item: "b")
        }
        // The signing key gone: a new one is made and the trail says so, as a fresh open does.
        let fresh = try AuditFixture()
        try await append(fresh.database, for: "first", item: "a")
        try FileManager.default.removeItem(atPath: AuditSigner.path(in: fresh.location))
        try await append(fresh.database, for: "second", item: "b")
        let events = try fresh.log.records().map(\.event)
        #expect(events.contains(.integrityFailure), "\(events)")
    }

    @Test("a signing key file replaced while the store stays open is the one the next request uses, as a fresh open would")
    func aReplacedSigningKeyIsRead() async throws {
        let fixture = try AuditFixture()
        try await append(fixture.database, for: "first", item: "a")
        try await append(fixture.database, for: "second", item: "b")
        // Another key planted in its place (a private file, so that it is read at all).
        let path = AuditSigner.path(in: fixture.location)
        let planted = path + ".planted"
        _ = FileManager.default.createFile(atPath: planted, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                                       attributes: [.posixPermissions: 0o600])
        _ = rename(planted, path)
        try await append(fixture.database, for: "third", item: "c")
        // The kept key would have signed on; the planted one did not sign the seal, so
        // nothing is signed over it, and the trail says the seal is not its key's.
        #expect(try fixture.log.seal()?.sequence == 2, "the kept signing key signed on after its file was replaced")
        guard case .broken = try fixture.reopen().verify() else {
            Issue.record("a trail sealed by another key than its file's verified")
            return
        }
    }

    @Test("the head row deleted while the store stays open is reported at the next request")
    func aWipedHeadIsReported() async throws {
        let fixture = try AuditFixture()
        _ = try Vault.create(database: fixture.database, passphrase: SecretBytes(copying: Array("a long enough passphrase".utf8)),
                             kdf: .minimum, log: fixture.log)
        try await append(fixture.database, for: "first", item: "a")
        try fixture.tamper("DELETE FROM auditHead")
        await #expect(throws: ServiceError.self) {
            try await append(fixture.database, for: "second", item: "b")
        }
    }
}
