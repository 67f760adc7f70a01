import Foundation
import Testing
import TouchgatePolicy
@testable import TouchgateVault

/// The public chain and its signed seal: what a verifier holding only the public key
/// can check, and what an attacker with the database file (but neither key) cannot slip past.
@Suite("The audit trail's public chain and signed seal")
struct AuditSealTests {
    /// Runs the public verification over the stored records and seal, as a central
    /// verifier would over an export: nil when it all checks out.
    private func publicProblem(_ log: AuditLog, publicKey: [UInt8]? = nil) throws -> String? {
        var verifier = AuditChainVerifier(publicKey: publicKey ?? log.publicKey)
        var problem: (sequence: Int64, reason: String)?
        let trail = try log.seal()?.trail ?? []
        let (_, seal) = try log.export { record in
            if problem == nil { problem = verifier.add(record, trail: trail) }
        }
        if let problem { return problem.reason }
        guard let seal else { return "no seal" }
        return verifier.finish(seal: seal)?.reason
    }

    private func seal(_ fixture: AuditFixture) throws -> AuditSeal {
        try #require(try fixture.log.seal())
    }

    @Test("every append moves the signed seal; the trail verifies with the public key alone")
    func sealFollowsAppends() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(12)
        let seal = try seal(fixture)
        #expect(seal.sequence == 12)
        #expect(seal.isSigned(by: fixture.log.publicKey))
        #expect(try publicProblem(fixture.log) == nil)
        #expect(try fixture.log.verify() == .intact(count: 12))
        // Another key does not vouch for it.
        var other = fixture.log.publicKey
        other[0] ^= 1
        #expect(try publicProblem(fixture.log, publicKey: other)?.contains("not signed by the registered public key") == true)
        // The signing key file is private, like audit.key.
        var info = stat()
        #expect(lstat(AuditSigner.path(in: fixture.location), &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test("a field edited with sqlite3, public links recomputed: found, and never signed over by later appends")
    func editedRecordIsNotLaundered() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(6)
        let trail = try seal(fixture).trail
        // The attacker rewrites record 3's reason and recomputes every public link after it
        // (they need no key for that), so that the stored chain is consistent.
        try fixture.tamper("UPDATE audit SET reason = 'nothing to see' WHERE seq = 3")
        var previous = try fixture.database.writer.read { db in
            try Data.fetchOne(db, sql: "SELECT chain FROM audit WHERE seq = 2").map(Array.init)!
        }
        for record in try fixture.log.records().filter({ $0.sequence >= 3 }) {
            let link = AuditSeal.link(trail: trail, previous: previous, record: record)
            try fixture.tamper("UPDATE audit SET prevChain = ?, chain = ? WHERE seq = ?",
                               arguments: [Data(previous), Data(link), record.sequence])
            previous = link
        }
        // The seal still names the genuine chain: the public check fails at the head.
        #expect(try publicProblem(fixture.log)?.contains("not the one the signed head names") == true)
        // Appending more does not sign the rewritten chain: the seal extends its own link.
        try fixture.appendSample(2)
        #expect(try seal(fixture).sequence == 8)
        #expect(try publicProblem(fixture.log) != nil, "an append laundered an edited record into the signed chain")
        // The MAC chain still names the record itself.
        guard case let .broken(at, _) = try fixture.log.verify() else {
            Issue.record("an edited record verified")
            return
        }
        #expect(at == 3)
    }

    @Test("a seal edited or deleted with sqlite3 is reported and left as evidence")
    func editedSeal() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(4)
        try fixture.tamper("UPDATE auditSeal SET seq = 2")
        #expect(brokenReason(try fixture.log.verify()).contains("not signed by this trail's signing key"))
        try fixture.log.append(.itemRead, .success, item: "x")
        #expect(try seal(fixture).sequence == 2, "a forged seal was moved forward (re-signed)")

        let second = try AuditFixture()
        try second.appendSample(3)
        try second.tamper("DELETE FROM auditSeal")
        #expect(brokenReason(try second.log.verify()).contains("seal) is missing"))
        // Reopening does not start a new seal over records already linked.
        let reopened = try second.reopen()
        #expect(try reopened.seal() == nil)
        try reopened.append(.itemRead, .success, item: "y")
        #expect(try reopened.seal() == nil)
    }

    @Test("the tail removed with sqlite3 (records and head row rewound) is still found by the public check")
    func truncatedTail() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(5)
        try fixture.tamper("DELETE FROM audit WHERE seq > 3")
        #expect(try publicProblem(fixture.log)?.contains("tail was removed") == true)
    }

    @Test("a trail written before the public chain existed is linked once and continued, not restarted")
    func existingTrailContinued() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(7)
        let before = try fixture.log.records()
        // What a store of the previous release looks like after the schema migration.
        try fixture.tamper("UPDATE audit SET prevChain = NULL, chain = NULL; DELETE FROM auditSeal")
        try FileManager.default.removeItem(atPath: AuditSigner.path(in: fixture.location))
        let log = try fixture.reopen()
        let records = try log.records()
        #expect(records.count == 8)
        #expect(Array(records.prefix(7)).map(\.mac) == before.map(\.mac), "the old records were changed")
        #expect(records.last?.event == .auditUpgrade)
        #expect(records.last?.reason.contains("7 records written before the public chain existed") == true)
        #expect(records.first?.previousChain == AuditSeal.genesis)
        #expect(try publicProblem(log) == nil)
        #expect(try log.verify() == .intact(count: 8))
        // Once only.
        _ = try fixture.reopen()
        #expect(try log.records().count == 8)
    }

    @Test("a lost signing key: a new one signs from then on, the trail records it, the old key's verifier sees it")
    func lostSigningKey() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        let oldKey = fixture.log.publicKey
        try FileManager.default.removeItem(atPath: AuditSigner.path(in: fixture.location))
        let log = try fixture.reopen()
        #expect(log.publicKey != oldKey)
        let last = try #require(try log.records().last)
        #expect(last.event == .integrityFailure)
        #expect(last.reason.contains(Hex.encode(log.publicKey)))
        #expect(try log.verify() == .intact(count: 4))
        #expect(try publicProblem(log) == nil)
        #expect(try publicProblem(log, publicKey: oldKey) != nil)
    }

    @Test("a store's own key left behind when the machine's key takes over: the trail is adopted once, the old key removed")
    func machineKeyAdoptsAStoresOwnKey() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        let ownKey = fixture.log.publicKey
        let ownFile = AuditSigner.path(in: fixture.location)
        // The same store, now with its signing key in a machine-wide directory (touchgated).
        let machine = fixture.root.appendingPathComponent("machine")
        try FileManager.default.createDirectory(at: machine, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let moved = StoreLocation(directory: fixture.location.directory, signingKeyDirectory: machine)
        let database = try TouchgateDatabase(location: moved)
        defer { try? database.closeConnections() }
        let log = try AuditLog(database: database)
        #expect(log.publicKey != ownKey)
        #expect(FileManager.default.fileExists(atPath: machine.appendingPathComponent("audit-sign.key").path))
        #expect(!FileManager.default.fileExists(atPath: ownFile), "the store's own key is still there")
        let last = try #require(try log.records().last)
        #expect(last.event == .auditUpgrade && last.reason.contains(Hex.encode(log.publicKey))
                && last.reason.contains(Hex.encode(ownKey)), "\(last.reason)")
        // One trail, continued: the machine's key alone verifies it, and later appends are sealed.
        try log.append(.vaultLock, .success)
        #expect(try log.verify() == .intact(count: 5))
        #expect(try publicProblem(log) == nil)
        #expect(try log.records().filter { $0.event == .auditUpgrade }.count == 1)
        // A second store adopted by the same machine key: one key for both trails.
        let other = try AuditFixture()
        try other.appendSample(2)
        let second = StoreLocation(directory: other.location.directory, signingKeyDirectory: machine)
        let otherDatabase = try TouchgateDatabase(location: second)
        defer { try? otherDatabase.closeConnections() }
        #expect(try AuditLog(database: otherDatabase).publicKey == log.publicKey)
    }

    @Test("a key file planted beside a store that did not sign its seal is not adopted: no upgrade record, the file stays as evidence")
    func aPlantedKeyIsNotAdopted() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        let before = try fixture.log.records().count
        // Replace the store's own key with another one: it never signed this trail.
        let ownFile = AuditSigner.path(in: fixture.location)
        try FileManager.default.removeItem(atPath: ownFile)
        let other = try AuditFixture()
        try FileManager.default.copyItem(atPath: AuditSigner.path(in: other.location), toPath: ownFile)
        let machine = fixture.root.appendingPathComponent("machine")
        try FileManager.default.createDirectory(at: machine, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let database = try TouchgateDatabase(location: StoreLocation(directory: fixture.location.directory,
                                                                     signingKeyDirectory: machine))
        defer { try? database.closeConnections() }
        let log = try AuditLog(database: database)
        #expect(try log.records().filter { $0.event == .auditUpgrade }.isEmpty)
        #expect(FileManager.default.fileExists(atPath: ownFile), "the planted key was removed")
        // The machine's key was new here, so the lost-key rule applies: the trail is signed
        // again, and an integrity.failure record (not an upgrade) says so, for the verifier.
        let records = try log.records()
        #expect(records.count == before + 1 && records.last?.event == .integrityFailure, "\(records.last!)")
    }

    @Test("pruned and restarted trails: the rest still verifies publicly; a restart starts a new trail id")
    func pruneAndRestart() throws {
        let clock = AuditTestClock(Date(timeIntervalSince1970: 1_000_000_000))
        let fixture = try AuditFixture(clock: clock)
        try fixture.appendSample(4)
        clock.now = Date(timeIntervalSince1970: 1_500_000_000)
        try fixture.appendSample(2)
        #expect(try fixture.log.prune(before: Date(timeIntervalSince1970: 1_200_000_000)) == 4)
        #expect(try fixture.log.verify() == .intact(count: 3))
        #expect(try publicProblem(fixture.log) == nil)

        let trail = try seal(fixture).trail
        let restarted = try AuditLog.restart(database: fixture.database, journal: .disabled, now: clock.function,
                                             reason: "test")
        let newSeal = try #require(try restarted.seal())
        #expect(newSeal.trail != trail)
        #expect(try restarted.verify() == .intact(count: 1))
        #expect(try publicProblem(restarted) == nil)
    }

    @Test("exported records decode back to the same links (the wire loses nothing the link covers)")
    func linkOfDecodedRecord() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(3)
        let trail = try seal(fixture).trail
        for record in try fixture.log.records() {
            let copy = AuditRecord(sequence: record.sequence, unixTime: record.unixTime, bootTime: record.bootTime,
                                   bootID: record.bootID, uid: record.uid, loginName: record.loginName,
                                   vaultUser: record.vaultUser, event: AuditEvent(stored: record.event.rawValue),
                                   item: record.item, outcome: AuditOutcome(stored: record.outcome.rawValue),
                                   reason: record.reason, previousMAC: record.previousMAC, mac: record.mac)
            #expect(AuditSeal.link(trail: trail, previous: record.previousChain!, record: copy) == record.chain)
        }
    }
}
