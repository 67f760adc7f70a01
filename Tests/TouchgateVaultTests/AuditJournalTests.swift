import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit copies to journald: native protocol datagrams")
struct AuditJournalTests {
    @Test("each append sends one datagram with the expected fields")
    func fields() throws {
        let socketDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("tg-j-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: socketDirectory) }
        let journald = try TestDatagramSocket(directory: socketDirectory)
        let fixture = try AuditFixture(journal: AuditJournal(socketPath: journald.path))

        let record = try fixture.log.append(.itemRead, .denied, vaultUser: "alice", item: "db-password",
                                            reason: "locked out")
        let fields = try #require(journald.receiveFields())
        #expect(fields["MESSAGE_ID"] == AuditJournal.messageID(for: .itemRead))
        #expect(fields["MESSAGE_ID"]?.count == 32)
        #expect(fields["TOUCHGATE_UID"] == String(getuid()))
        #expect(fields["TOUCHGATE_USER"] == record.loginName)
        #expect(fields["TOUCHGATE_CHAIN"] == record.chain.map { $0.map { String(format: "%02x", $0) }.joined() })
        #expect(fields["TOUCHGATE_CHAIN"]?.count == 64)
        #expect(fields["SYSLOG_IDENTIFIER"] == "touchgate")
        #expect(fields["PRIORITY"] == "5")
        #expect(fields["TOUCHGATE_EVENT"] == "item.read")
        #expect(fields["TOUCHGATE_OUTCOME"] == "denied")
        #expect(fields["TOUCHGATE_SEQ"] == "1")
        #expect(fields["TOUCHGATE_ITEM"] == "db-password")
        #expect(fields["TOUCHGATE_VAULT_USER"] == "alice")
        #expect(fields["TOUCHGATE_REASON"] == "locked out")
        #expect(fields["TOUCHGATE_MAC"] == record.mac.map { String(format: "%02x", $0) }.joined())
        let message = try #require(fields["MESSAGE"])
        #expect(message.contains("item.read denied"))
        #expect(message.contains("db-password"))

        try fixture.log.append(.vaultUnlock, .success, reason: "passphrase")
        let second = try #require(journald.receiveFields())
        #expect(second["TOUCHGATE_SEQ"] == "2")
        // One MESSAGE_ID per event type, the same on every machine.
        #expect(second["MESSAGE_ID"] == AuditJournal.messageID(for: .vaultUnlock))
        #expect(second["MESSAGE_ID"] != fields["MESSAGE_ID"])
        // The ids are BLAKE2b-128 of a fixed text: these values come from Python's hashlib, an
        // independent implementation, and are those docs/AUDIT-FORMATS.md lists.
        #expect(AuditJournal.messageID(for: .itemRead) == "ed67144fa79556677b8abb9a54b7e124")
        #expect(AuditJournal.messageID(for: .authAttempt) == "5a2a76219fdd24b910884c29d4433907")
        #expect(AuditJournal.messageID(for: .integrityFailure) == "a63cbe8442a51d499f2faa5670a1b3e9")
        #expect(second["PRIORITY"] == "6")
        #expect(second["TOUCHGATE_ITEM"] == nil)
        #expect(second["TOUCHGATE_VAULT_USER"] == nil)
    }

    @Test("a prune record reaches the journal too")
    func pruneIsSent() throws {
        let socketDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("tg-j-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: socketDirectory) }
        let journald = try TestDatagramSocket(directory: socketDirectory)
        let fixture = try AuditFixture(journal: AuditJournal(socketPath: journald.path))
        try fixture.log.prune(before: Date(timeIntervalSince1970: 0))
        let fields = try #require(journald.receiveFields())
        #expect(fields["TOUCHGATE_EVENT"] == "audit.prune")
        #expect(fields["TOUCHGATE_OUTCOME"] == "success")
    }

    @Test("a value with a newline uses the length-prefixed form")
    func binaryField() throws {
        let bytes = AuditJournal.datagram([("A", "one"), ("B", "two\nlines"), ("C", "three")])
        var expected = Array("A=one\nB\n".utf8)
        expected += [9, 0, 0, 0, 0, 0, 0, 0]
        expected += Array("two\nlines\nC=three\n".utf8)
        #expect(bytes == expected)
    }

    @Test("a missing journal socket is not an error")
    func missingSocket() throws {
        let fixture = try AuditFixture(journal: AuditJournal(socketPath: "/nonexistent/touchgate/journal.sock"))
        try fixture.log.append(.vaultLock, .success)
        #expect(try fixture.log.verify() == .intact(count: 1))
    }
}
