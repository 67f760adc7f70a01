import Foundation
import Testing
@testable import TouchgateVault

@Suite("Template sealing")
struct VaultTemplateSealingTests {
    private func print(_ finger: String, _ template: [UInt8]) -> StoredPrint {
        StoredPrint(user: "alice", finger: finger, driver: "virtual_image", deviceID: "0",
                    enrolledAt: Date(timeIntervalSince1970: 1_700_000_000), onDevice: false, template: template)
    }

    @Test("a template round-trips through PrintStore sealed; a tampered one fails")
    func roundTripAndTamper() throws {
        let fixture = try VaultFixture()
        let sealing = try fixture.vault.templateSealing(key: fixture.key)
        let template = Array("FP3 minutiae".utf8) + (0..<200).map { UInt8($0 % 251) }
        let prints = PrintStore(database: fixture.store.database, sealing: sealing)
        try prints.save(print("right-index", template), replace: false)
        #expect(try prints.prints().map(\.template) == [template])

        let stored = try fixture.store.blob("SELECT template FROM print")
        #expect(stored.first == VaultTemplateSealing.version)
        #expect(!Data(stored).contains(Data("FP3 minutiae".utf8)))
        for index in [0, 1, 24, 25, stored.count - 1] {
            var flipped = stored
            flipped[index] ^= 0x04
            try fixture.store.tamper("UPDATE print SET template = ?", [Data(flipped)])
            #expect(throws: VaultError.self, "byte \(index)") { try prints.prints() }
        }
        // Bound to its context: moved to another finger, it no longer opens.
        try fixture.store.tamper("UPDATE print SET template = ?, finger = 'left-thumb'", [Data(stored)])
        let error = thrownError { try prints.prints() }
        guard case .integrity? = error as? VaultError else {
            Issue.record("expected an integrity error, got \(String(describing: error))")
            return
        }
    }

    @Test("the same vault key gives the same template key; another vault's does not")
    func keyDerivation() throws {
        let fixture = try VaultFixture()
        let sealed = try VaultTemplateSealing(vaultKey: fixture.key).seal([1, 2, 3], context: "c")
        let again = try fixture.vault.unlock(passphrase: secret(VaultFixture.passphrase))
        #expect(try VaultTemplateSealing(vaultKey: again).open(sealed, context: "c") == [1, 2, 3])
        let other = try VaultFixture()
        #expect(throws: VaultError.self) { try VaultTemplateSealing(vaultKey: other.key).open(sealed, context: "c") }
        #expect(throws: VaultError.self) { try VaultTemplateSealing(vaultKey: fixture.key).open([0x46, 0x50, 0x33], context: "c") }
    }

    @Test("creating the vault seals the plaintext prints already stored, and marks them sealed")
    func migrationSealsPlaintextPrints() throws {
        let store = try TemporaryStore()
        let plain = PrintStore(database: store.database)  // before any vault: plaintext
        let templates: [String: [UInt8]] = [
            "left-index": Array("FP3 left".utf8), "right-index": Array("FP3 right".utf8), "right-thumb": [],
        ]
        for (finger, template) in templates { try plain.save(print(finger, template), replace: false) }
        #expect(try Vault.templateSealing(for: store.database, key: nil) is PlaintextTemplates)

        let vault = try Vault.create(database: store.database, passphrase: secret("pw"), kdf: .minimum, owner: "alice")
        #expect(try store.blob("SELECT CAST(templates_sealed AS BLOB) FROM vault_meta") == Array("1".utf8))
        let raw = try store.database.writer.read { db in try Data.fetchAll(db, sql: "SELECT template FROM print") }
        #expect(raw.count == 3)
        #expect(raw.allSatisfy { $0.first == VaultTemplateSealing.version && !$0.starts(with: Data("FP3".utf8)) })

        // Locked: no way to read templates.
        #expect(throws: VaultError.locked) { try Vault.templateSealing(for: store.database, key: nil) }
        let key = try vault.unlock(passphrase: secret("pw"))
        let sealed = PrintStore(database: store.database, sealing: try Vault.templateSealing(for: store.database, key: key))
        let read = try sealed.prints()
        #expect(Dictionary(uniqueKeysWithValues: read.map { ($0.finger, $0.template) }) == templates)
        // What the old plaintext sealing sees now is ciphertext, not a template.
        #expect(try plain.prints().map(\.template) != read.map(\.template))
    }
}
