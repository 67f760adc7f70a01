import CSodium
import Foundation
import Testing
import TouchgateBasics
@testable import TouchgateVault

@Suite("Vault key hierarchy")
struct VaultKeyHierarchyTests {
    @Test("the default KDF is libsodium MODERATE: opslimit 3, memlimit 256 MiB")
    func defaultKDFIsModerate() {
        #expect(KDFParameters.default == .moderate)
        #expect(KDFParameters.moderate.opsLimit == 3)
        #expect(KDFParameters.moderate.memLimit == 256 * 1024 * 1024)
        #expect(KDFParameters.moderate.algorithm == crypto_pwhash_alg_argon2id13())
        #expect(KDFParameters.minimum.opsLimit == UInt64(crypto_pwhash_opslimit_min()))
        #expect(KDFParameters.minimum.memLimit == UInt64(crypto_pwhash_memlimit_min()))
    }

    @Test("the KDF parameters and salt are stored beside the wrapped key")
    func parametersStored() throws {
        let fixture = try VaultFixture()
        #expect(try fixture.vault.kdfParameters() == .minimum)
        let salt = try fixture.store.blob("SELECT kdf_salt FROM vault_meta")
        #expect(salt.count == Int(crypto_pwhash_saltbytes()))
        let wrapped = try fixture.store.blob("SELECT wrapped_vault_key FROM vault_meta")
        #expect(wrapped.count == 24 + 32 + 16)
    }

    @Test("opening before creating says to run `touchgate init`; creating twice refuses")
    func createAndOpen() throws {
        let store = try TemporaryStore()
        #expect(try !Vault.exists(in: store.database))
        let notYet = thrownError { try Vault.open(database: store.database) }
        #expect(notYet as? VaultError == .notInitialized(directory: store.location.directory.path))
        #expect(notYet.map { "\($0)" }?.contains("touchgate init") == true)

        try Vault.create(database: store.database, passphrase: secret("first"), kdf: .minimum)
        let again = thrownError { try Vault.create(database: store.database, passphrase: secret("second"), kdf: .minimum) }
        #expect(again as? VaultError == .alreadyInitialized(directory: store.location.directory.path))
        // The first vault is intact.
        _ = try Vault.open(database: store.database).unlock(passphrase: secret("first"))
        #expect(throws: VaultError.invalidArgument("the passphrase must not be empty")) {
            try Vault.create(database: TemporaryStore().database, passphrase: secret(""), kdf: .minimum)
        }
    }

    @Test("a wrong passphrase is rejected, with the same error as a tampered wrapped key")
    func wrongPassphrase() throws {
        let fixture = try VaultFixture()
        let wrong = thrownError { try fixture.vault.unlock(passphrase: secret("Correct horse battery staple")) }
        #expect(wrong as? VaultError == .wrongPassphrase)
        #expect("\(wrong!)" == "wrong passphrase; try again")

        var wrapped = try fixture.store.blob("SELECT wrapped_vault_key FROM vault_meta")
        wrapped[40] ^= 0x01
        try fixture.store.tamper("UPDATE vault_meta SET wrapped_vault_key = ?", [Data(wrapped)])
        let tampered = thrownError { try fixture.vault.unlock(passphrase: secret(VaultFixture.passphrase)) }
        #expect(tampered as? VaultError == .wrongPassphrase)
        #expect("\(tampered!)" == "\(wrong!)")
    }

    @Test("altered KDF salt or parameters give the wrong-passphrase error too")
    func tamperedKDFRecord() throws {
        let fixture = try VaultFixture()
        var salt = try fixture.store.blob("SELECT kdf_salt FROM vault_meta")
        salt[0] ^= 0x80
        try fixture.store.tamper("UPDATE vault_meta SET kdf_salt = ?", [Data(salt)])
        #expect(throws: VaultError.wrongPassphrase) { try fixture.vault.unlock(passphrase: secret(VaultFixture.passphrase)) }

        let other = try VaultFixture()
        try other.store.tamper("UPDATE vault_meta SET kdf_opslimit = kdf_opslimit + 1")
        #expect(throws: VaultError.wrongPassphrase) { try other.vault.unlock(passphrase: secret(VaultFixture.passphrase)) }
        try other.store.tamper("UPDATE vault_meta SET kdf_memlimit = 1 << 40")  // would exhaust memory
        #expect(throws: VaultError.wrongPassphrase) { try other.vault.unlock(passphrase: secret(VaultFixture.passphrase)) }
    }

    @Test("changing the passphrase keeps every item readable and the old passphrase fails")
    func changePassphrase() throws {
        let fixture = try VaultFixture()
        for index in 0..<5 {
            try fixture.vault.setItem(named: "item-\(index)", value: secret("value \(index)"), policy: "biometryAny",
                                      freshTouch: index % 2 == 0,
                                      enrollmentDigest: index == 3 ? [1, 2, 3] : nil, key: fixture.key)
        }
        let oldSalt = try fixture.store.blob("SELECT kdf_salt FROM vault_meta")
        let oldItems = try fixture.store.blob("SELECT group_concat(hex(wrapped_key) || hex(ciphertext)) FROM vault_item")

        try fixture.vault.changePassphrase(from: secret(VaultFixture.passphrase), to: secret("new passphrase"))

        #expect(try fixture.store.blob("SELECT kdf_salt FROM vault_meta") != oldSalt)
        // Only the vault key was re-wrapped: item rows are byte-for-byte unchanged.
        #expect(try fixture.store.blob("SELECT group_concat(hex(wrapped_key) || hex(ciphertext)) FROM vault_item") == oldItems)
        #expect(throws: VaultError.wrongPassphrase) { try fixture.vault.unlock(passphrase: secret(VaultFixture.passphrase)) }
        let key = try fixture.vault.unlock(passphrase: secret("new passphrase"))
        #expect(key.bytes.constantTimeEquals(fixture.key.bytes))
        for index in 0..<5 {
            #expect(string(try fixture.vault.item(named: "item-\(index)", key: key).value) == "value \(index)")
        }
        // A wrong old passphrase changes nothing.
        #expect(throws: VaultError.wrongPassphrase) {
            try fixture.vault.changePassphrase(from: secret("nope"), to: secret("third"))
        }
        _ = try fixture.vault.unlock(passphrase: secret("new passphrase"))
    }

    @Test("the KDF parameters can be raised when the passphrase is changed")
    func raiseParameters() throws {
        let fixture = try VaultFixture()
        let raised = KDFParameters(opsLimit: 2, memLimit: 64 * 1024)
        try fixture.vault.changePassphrase(from: secret(VaultFixture.passphrase), to: secret(VaultFixture.passphrase),
                                           kdf: raised)
        #expect(try fixture.vault.kdfParameters() == raised)
        let key = try fixture.vault.unlock(passphrase: secret(VaultFixture.passphrase))
        #expect(key.bytes.constantTimeEquals(fixture.key.bytes))
    }

    @Test("user-facing messages say what to do and carry no secret")
    func messages() {
        #expect("\(VaultError.locked)".contains("run `touchgate unlock`"))
        #expect("\(VaultError.notInitialized(directory: "/d"))".contains("run `touchgate init`"))
        #expect("\(VaultError.wrongPassphrase)" == "wrong passphrase; try again")
    }
}
