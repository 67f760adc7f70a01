import Foundation
import Testing
@testable import TouchgateVault

@Suite("Templates are never sealed twice, whatever the marker says")
struct TemplateDoubleSealingTests {
    private func print(_ finger: String, _ template: [UInt8]) -> StoredPrint {
        StoredPrint(user: "alice", finger: finger, driver: "virtual_image", deviceID: "0",
                    enrolledAt: Date(timeIntervalSince1970: 1_700_000_000), onDevice: false, template: template)
    }

    private func templates(_ fixture: StateFixture) throws -> [Data] {
        try fixture.database.writer.read { db in try Data.fetchAll(db, sql: "SELECT template FROM print ORDER BY finger") }
    }

    @Test("a flipped marker is refused before anything is sealed; the prints still open")
    func flippedMarker() throws {
        let fixture = try StateFixture()
        let sealing = try fixture.vault.vault.templateSealing(key: fixture.vault.key)
        let prints = PrintStore(database: fixture.database, sealing: sealing)
        try prints.save(print("right-index", Array("FP3 right".utf8)), replace: false)
        let before = try templates(fixture)

        try fixture.sqlite3("UPDATE vault_meta SET templates_sealed = 0")
        _ = tamperDetail { try fixture.vault.vault.templateSealing(key: fixture.vault.key) }
        #expect(try templates(fixture) == before)
        #expect(try prints.prints().map(\.template) == [Array("FP3 right".utf8)])
    }

    @Test("with the marker really cleared (a reseal), sealing again seals only the plaintext templates")
    func perTemplate() throws {
        let fixture = try StateFixture()
        let prints = PrintStore(database: fixture.database, sealing: try fixture.vault.vault.templateSealing(key: fixture.vault.key))
        try prints.save(print("right-index", Array("FP3 right".utf8)), replace: false)
        let sealedBefore = try templates(fixture)
        // A plaintext print slipped in (as a reader layer without the vault would store it)
        // and the marker cleared through the repair mechanism: the worst honest case.
        try PrintStore(database: fixture.database).save(print("left-index", Array("FP3 left".utf8)), replace: false)
        try fixture.state.reseal(try fixture.state.unverifiedState().values, templatesSealed: false)

        let sealing = try fixture.vault.vault.templateSealing(key: fixture.vault.key)
        let stored = try templates(fixture)
        #expect(stored[1] == sealedBefore[0], "the sealed template is left byte for byte")
        #expect(stored[0].first == VaultTemplateSealing.version)
        let read = try PrintStore(database: fixture.database, sealing: sealing).prints()
        #expect(read.map(\.template) == [Array("FP3 left".utf8), Array("FP3 right".utf8)])
        #expect(try fixture.state.unverifiedState() == UnverifiedState(
            values: try fixture.state.unverifiedState().values, templatesSealed: true, problem: nil))
        // And again: nothing changes.
        try fixture.state.reseal(try fixture.state.unverifiedState().values, templatesSealed: false)
        _ = try fixture.vault.vault.templateSealing(key: fixture.vault.key)
        #expect(try templates(fixture) == stored)
    }

    @Test("a template that looks sealed but does not open is reported, not sealed again; nothing is written")
    func damagedSealedTemplate() throws {
        let fixture = try StateFixture()
        let plain = PrintStore(database: fixture.database)
        try plain.save(print("left-index", Array("FP3 left".utf8)), replace: false)
        try plain.save(print("right-index", [VaultTemplateSealing.version] + [UInt8](repeating: 7, count: 60)), replace: false)
        try fixture.state.reseal(try fixture.state.unverifiedState().values, templatesSealed: false)
        let before = try templates(fixture)
        let error = thrownError { try fixture.vault.vault.templateSealing(key: fixture.vault.key) }
        guard case .integrity? = error as? VaultError else {
            Issue.record("expected an integrity error, got \(String(describing: error))")
            return
        }
        #expect(try templates(fixture) == before)
        #expect(try fixture.state.unverifiedState().templatesSealed == false)
    }
}
