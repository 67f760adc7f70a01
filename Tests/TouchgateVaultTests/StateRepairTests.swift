import Foundation
import Testing
@testable import TouchgateVault

@Suite("Repair: read the state unverified, reseal chosen values")
struct StateRepairTests {
    private static func repairRecord(_ outcome: StateResealing) -> AuditEntry {
        AuditEntry(event: .integrityFailure, outcome: .success, vaultUser: "alice",
                   reason: outcome.headRebuilt ? "state resealed; audit head rebuilt" : "state resealed")
    }

    @Test("unverified read shows the edited values and the problem; reseal with chosen values repairs, with its record")
    func resealEditedState() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3(#"UPDATE vault_state SET value = CAST('{"failures":0}' AS BLOB) WHERE key = 'policy.state'"#)
        let found = try fixture.state.unverifiedState()
        #expect(found.values["policy.state"] == Data(#"{"failures":0}"#.utf8))
        #expect(found.values["policy.settings"] == StateFixture.settings)
        #expect(found.templatesSealed == true)
        #expect(found.problem?.contains("edited outside touchgate") == true)

        // The service decides: keep the settings, restore a strict lockout state.
        var chosen = found.values
        chosen["policy.state"] = Data(#"{"failures":20}"#.utf8)
        let outcome = try fixture.state.reseal(chosen, recording: Self.repairRecord)
        #expect(!outcome.headRebuilt)
        #expect(outcome.problem?.contains("edited outside touchgate") == true)
        #expect(try fixture.state.state("policy.state") == Data(#"{"failures":20}"#.utf8))
        #expect(try fixture.state.unverifiedState().problem == nil)
        #expect(try fixture.log.verify() == .intact(count: 3))
        #expect(try fixture.log.records().last?.reason == "state resealed")
    }

    @Test("a forged head is rebuilt at the last record; the records are kept")
    func forgedHead() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("UPDATE auditHead SET mac = zeroblob(32)")
        let outcome = try fixture.state.reseal(try fixture.state.unverifiedState().values, recording: Self.repairRecord)
        #expect(outcome.headRebuilt)
        #expect(try fixture.log.verify() == .intact(count: 3))
        #expect(try fixture.log.records().last?.reason == "state resealed; audit head rebuilt")
        #expect(try fixture.state.state("policy.settings") == StateFixture.settings)
    }

    @Test("a deleted head with a vault present: the log will not open, but reseal (without a log) rebuilds it")
    func deletedHead() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("DELETE FROM auditHead")
        #expect(throws: AuditError.self) { try fixture.reopen() }
        let repair = StateStore(database: try TouchgateDatabase(location: fixture.location))
        #expect(try repair.unverifiedState().problem?.contains("missing") == true)
        let outcome = try repair.reseal(try repair.unverifiedState().values, recording: Self.repairRecord)
        #expect(outcome.headRebuilt)
        let reopened = try fixture.reopen()
        #expect(try reopened.verify() == .intact(count: 3))
        #expect(try StateStore(log: reopened).state("enrollment.generation") == StateFixture.generation)
    }

    @Test("after an older state and head were swapped back, reseal moves the head to the last record")
    func swappedHead() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("CREATE TABLE savedHead AS SELECT * FROM auditHead")
        try fixture.log.append(.authAttempt, .failure, vaultUser: "alice")
        try fixture.sqlite3("DELETE FROM auditHead; INSERT INTO auditHead SELECT * FROM savedHead; DROP TABLE savedHead")
        #expect(tamperDetail { try fixture.state.state("policy.state") } != nil)
        let outcome = try fixture.state.reseal(try fixture.state.unverifiedState().values, recording: Self.repairRecord)
        #expect(outcome.headRebuilt)
        #expect(try fixture.log.verify() == .intact(count: 4))
    }

    @Test("reseal can remove every value and reset the marker; without a key file it refuses")
    func resetAll() throws {
        let fixture = try StateFixture()
        try fixture.sqlite3("INSERT INTO vault_state (key, value, updated_at) VALUES ('junk', 'text', 0)")
        #expect(try fixture.state.unverifiedState().values["junk"] == Data("text".utf8))
        try fixture.state.reseal([:], templatesSealed: false)
        #expect(try fixture.state.unverifiedState() == UnverifiedState(values: [:], templatesSealed: false, problem: nil))
        #expect(try fixture.log.verify().isIntact)

        try FileManager.default.removeItem(atPath: fixture.keyPath)
        let keyless = StateStore(database: fixture.database)
        #expect(try keyless.unverifiedState().problem?.contains("audit key") == true)
        #expect(throws: AuditError.self) { try keyless.reseal([:]) }
    }
}
