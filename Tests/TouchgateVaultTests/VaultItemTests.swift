import Foundation
import Testing
@testable import TouchgateVault

@Suite("Vault items")
struct VaultItemTests {
    @Test("an item round-trips; replacing keeps its id and creation date; listing shows no value")
    func roundTrip() throws {
        let fixture = try VaultFixture()
        try fixture.vault.setItem(named: "github-token", value: secret("ghp_secret"), policy: "biometryAny",
                                  freshTouch: true, enrollmentDigest: nil, key: fixture.key)
        let first = try fixture.vault.item(named: "github-token", key: fixture.key)
        #expect(string(first.value) == "ghp_secret")
        #expect(first.info.policy == "biometryAny" && first.info.freshTouch && first.info.owner == "alice")
        #expect(!"\(first)".contains("ghp_secret"))
        let id = try fixture.store.blob("SELECT CAST(id AS BLOB) FROM vault_item")

        try fixture.vault.setItem(named: "github-token", value: secret("ghp_rotated"), policy: "passphrase",
                                  freshTouch: false, enrollmentDigest: [9, 9], key: fixture.key)
        let second = try fixture.vault.item(named: "github-token", key: fixture.key)
        #expect(string(second.value) == "ghp_rotated")
        #expect(second.info.policy == "passphrase" && !second.info.freshTouch && second.info.enrollmentDigest == [9, 9])
        #expect(second.info.createdAt == first.info.createdAt)
        #expect(try fixture.store.blob("SELECT CAST(id AS BLOB) FROM vault_item") == id)

        try fixture.vault.setItem(named: "aws", value: secret("AKIA"), policy: "userPresence",
                                  freshTouch: false, enrollmentDigest: nil, key: fixture.key)
        let listed = try fixture.vault.items()
        #expect(listed.map(\.name) == ["aws", "github-token"])
        #expect(listed.map(\.policy) == ["userPresence", "passphrase"])
        #expect(!"\(listed)".contains("AKIA") && !"\(listed)".contains("ghp_"))
        // The value is not stored in clear anywhere in the row.
        let row = try fixture.store.blob("SELECT ciphertext FROM vault_item WHERE name = 'aws'")
        #expect(!Data(row).contains(Data("AKIA".utf8)))

        #expect(try fixture.vault.deleteItem(named: "aws"))
        #expect(try !fixture.vault.deleteItem(named: "aws"))
        #expect(throws: VaultError.itemNotFound(name: "aws")) { try fixture.vault.item(named: "aws", key: fixture.key) }
    }

    @Test("items are scoped to their owner")
    func owners() throws {
        let fixture = try VaultFixture(owner: "alice")
        try fixture.vault.setItem(named: "shared-name", value: secret("alice's"), policy: "biometryAny",
                                  freshTouch: false, enrollmentDigest: nil, key: fixture.key)
        let bob = try Vault.open(database: fixture.store.database, owner: "bob")
        #expect(try bob.items().isEmpty)
        try bob.setItem(named: "shared-name", value: secret("bob's"), policy: "biometryAny",
                        freshTouch: false, enrollmentDigest: nil, key: fixture.key)
        #expect(string(try bob.item(named: "shared-name", key: fixture.key).value) == "bob's")
        #expect(string(try fixture.vault.item(named: "shared-name", key: fixture.key).value) == "alice's")
    }

    /// How an edited item row is refused: its seal fails to open (the columns it binds), or
    /// the row no longer matches the version the audit head covers (its id and nonce).
    private enum Refusal { case seal, version }

    private func expectRefused(_ refusal: Refusal, item name: String, _ comment: Comment? = nil,
                               _ read: () throws -> Void) {
        do {
            try read()
            Issue.record("the edited item \(name) was read. \(comment?.rawValue ?? "")")
        } catch let error as VaultError where refusal == .seal {
            #expect(error == .integrity(what: "item \"\(name)\""), comment)
        } catch IntegrityError.stateTampered(let detail) where refusal == .version {
            #expect(detail.contains("an item was edited outside touchgate, or put back from an older copy"), comment)
        } catch {
            Issue.record("\(error) for \(refusal). \(comment?.rawValue ?? "")")
        }
    }

    /// Flips each byte of one blob column in turn; every flip must be refused.
    private func expectEveryFlipDetected(column: String, _ refusal: Refusal = .seal) throws {
        let fixture = try VaultFixture()
        try fixture.vault.setItem(named: "token", value: secret("s3cr3t"), policy: "biometryCurrentSet",
                                  freshTouch: true, enrollmentDigest: [0xAA, 0xBB], key: fixture.key)
        let original = try fixture.store.blob("SELECT \(column) FROM vault_item WHERE name = 'token'")
        #expect(!original.isEmpty)
        for index in original.indices {
            var flipped = original
            flipped[index] ^= 0x01
            try fixture.store.tamper("UPDATE vault_item SET \(column) = ? WHERE name = 'token'", [Data(flipped)])
            expectRefused(refusal, item: "token", "byte \(index) of \(column)") {
                _ = try fixture.vault.item(named: "token", key: fixture.key)
            }
        }
        try fixture.store.tamper("UPDATE vault_item SET \(column) = ? WHERE name = 'token'", [Data(original)])
        #expect(string(try fixture.vault.item(named: "token", key: fixture.key).value) == "s3cr3t")
    }

    @Test("flipping any byte of the ciphertext is detected")
    func tamperedCiphertext() throws { try expectEveryFlipDetected(column: "ciphertext") }

    @Test("flipping any byte of the nonce, the item's version, is detected")
    func tamperedNonce() throws { try expectEveryFlipDetected(column: "nonce", .version) }

    @Test("flipping any byte of the wrapped item key is detected")
    func tamperedWrappedKey() throws { try expectEveryFlipDetected(column: "wrapped_key") }

    @Test("editing the policy or another bound column by plain SQL breaks decryption",
          arguments: [
              "UPDATE vault_item SET policy = 'biometryAny'",
              "UPDATE vault_item SET policy = policy || ' '",
              "UPDATE vault_item SET fresh_touch = 0",
              "UPDATE vault_item SET enrollment_digest = NULL",
              "UPDATE vault_item SET enrollment_digest = x'AABC'",
              "UPDATE vault_item SET id = 'aaaaaaaa-0000-0000-0000-000000000000'",
          ])
    func tamperedColumns(sql: String) throws {
        let fixture = try VaultFixture()
        try fixture.vault.setItem(named: "token", value: secret("s3cr3t"), policy: "biometryCurrentSet",
                                  freshTouch: true, enrollmentDigest: [0xAA, 0xBB], key: fixture.key)
        try fixture.store.tamper(sql)
        // The id is part of the version the audit head covers; the other columns are bound by the seal.
        expectRefused(sql.contains("SET id") ? .version : .seal, item: "token") {
            _ = try fixture.vault.item(named: "token", key: fixture.key)
        }
    }

    @Test("renaming an item, moving it to another owner or swapping rows is detected")
    func movedRows() throws {
        let fixture = try VaultFixture()
        for name in ["a", "b"] {
            try fixture.vault.setItem(named: name, value: secret("value of \(name)"), policy: "biometryAny",
                                      freshTouch: false, enrollmentDigest: nil, key: fixture.key)
        }
        let original = try ["wrapped_key", "nonce", "ciphertext"].map {
            try fixture.store.blob("SELECT \($0) FROM vault_item WHERE name = 'a'")
        }
        // Give "a" the sealed columns of "b".
        try fixture.store.tamper("""
            UPDATE vault_item SET (wrapped_key, nonce, ciphertext) =
                (SELECT wrapped_key, nonce, ciphertext FROM vault_item WHERE name = 'b') WHERE name = 'a'
            """)
        // "a" now carries b's nonce: no longer its version.
        expectRefused(.version, item: "a") { _ = try fixture.vault.item(named: "a", key: fixture.key) }
        try fixture.store.tamper("UPDATE vault_item SET (wrapped_key, nonce, ciphertext) = (?, ?, ?) WHERE name = 'a'",
                                 StatementArguments(original.map { Data($0) }))
        // Renamed or moved, a row keeps its id and nonce, its version: its seal, bound to
        // its name and owner, refuses it.
        try fixture.store.tamper("UPDATE vault_item SET name = 'c' WHERE name = 'b'")
        expectRefused(.seal, item: "c") { _ = try fixture.vault.item(named: "c", key: fixture.key) }
        try fixture.store.tamper("UPDATE vault_item SET owner = 'mallory' WHERE name = 'c'")
        let mallory = try Vault.open(database: fixture.store.database, owner: "mallory")
        expectRefused(.seal, item: "c") { _ = try mallory.item(named: "c", key: fixture.key) }
    }

    @Test("destroyKeys removes current-set items bound to another enrollment state; unbound items stay")
    func destroyKeys() throws {
        let fixture = try VaultFixture()
        let enrolled: [UInt8] = Array(repeating: 0x11, count: 32)
        let changed: [UInt8] = Array(repeating: 0x22, count: 32)
        try fixture.vault.setItem(named: "bound", value: secret("only these fingers"), policy: "biometryCurrentSet",
                                  freshTouch: false, enrollmentDigest: enrolled, key: fixture.key)
        try fixture.vault.setItem(named: "unbound", value: secret("any finger"), policy: "biometryAny",
                                  freshTouch: false, enrollmentDigest: nil, key: fixture.key)

        // Same enrollment state: nothing happens.
        #expect(try fixture.vault.destroyKeys(currentEnrollmentDigest: enrolled) == [])
        #expect(string(try fixture.vault.item(named: "bound", key: fixture.key).value) == "only these fingers")

        #expect(try fixture.vault.destroyKeys(currentEnrollmentDigest: changed) == ["bound"])
        #expect(try fixture.store.blob("SELECT wrapped_key FROM vault_item WHERE name = 'bound'").isEmpty)
        let error = thrownError { try fixture.vault.item(named: "bound", key: fixture.key) }
        #expect(error as? VaultError == .itemInvalidated(name: "bound"))
        #expect(string(try fixture.vault.item(named: "unbound", key: fixture.key).value) == "any finger")
        #expect(try fixture.vault.items().map(\.isInvalidated) == [true, false])

        // Going back to the old enrollment state does not bring it back.
        #expect(try fixture.vault.destroyKeys(currentEnrollmentDigest: enrolled) == [])
        #expect(throws: VaultError.itemInvalidated(name: "bound")) { try fixture.vault.item(named: "bound", key: fixture.key) }
    }
}
