import Foundation
@testable import TouchgateVault
import TouchgateBasics

/// A fresh data directory (removed when the fixture goes) with a database in it.
final class TemporaryStore: Sendable {
    let location: StoreLocation
    let database: TouchgateDatabase

    init() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("touchgate-vault-tests-\(UUID().uuidString)")
        location = StoreLocation(directory: directory)
        database = try TouchgateDatabase(location: location)
    }

    deinit {
        try? FileManager.default.removeItem(at: location.directory)
    }

    /// Runs raw SQL against the database, as an attacker with the file would.
    func tamper(_ sql: String, _ arguments: StatementArguments = []) throws {
        try database.writer.write { db in try db.execute(sql: sql, arguments: arguments) }
    }

    /// One blob column of one row.
    func blob(_ sql: String, _ arguments: StatementArguments = []) throws -> [UInt8] {
        let data = try database.writer.read { db in try Data.fetchOne(db, sql: sql, arguments: arguments) }
        return Array(data ?? Data())
    }
}

/// A store with a vault created with the cheapest KDF, and its key.
struct VaultFixture {
    let store: TemporaryStore
    let vault: Vault
    let key: VaultKey
    static let passphrase = "correct horse battery staple"

    init(owner: String = "alice") throws {
        store = try TemporaryStore()
        vault = try Vault.create(database: store.database, passphrase: secret(Self.passphrase),
                                 kdf: .minimum, owner: owner)
        key = try vault.unlock(passphrase: secret(Self.passphrase))
    }
}

/// Test shorthand: a string's UTF-8 bytes in guarded memory.
func secret(_ text: String) -> SecretBytes {
    SecretBytes(copying: Array(text.utf8))
}

/// Test shorthand: guarded bytes back as a string.
func string(_ bytes: SecretBytes) -> String {
    bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

/// The error `body` throws, or `nil`.
func thrownError<T>(_ body: () throws -> T) -> (any Error)? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
