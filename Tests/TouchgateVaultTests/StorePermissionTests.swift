import Foundation
import Testing
@testable import TouchgateVault

@Suite("Unsafe permissions are refused")
struct StorePermissionTests {
    private func makeStoreThenClose() throws -> StoreLocation {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-perm-\(UUID().uuidString)")
        let location = StoreLocation(directory: directory)
        let store = try TouchgateDatabase(location: location)
        try Vault.create(database: store, passphrase: secret("pw"), kdf: .minimum)
        return location
    }

    @Test("a data directory with mode 0755 is refused")
    func openDirectory() throws {
        let location = try makeStoreThenClose()
        defer { try? FileManager.default.removeItem(at: location.directory) }
        #expect(chmod(location.directory.path, 0o755) == 0)
        let error = thrownError { try TouchgateDatabase(location: location) }
        guard case let .unsafePermissions(path, detail)? = error as? StoreError else {
            Issue.record("expected unsafePermissions, got \(String(describing: error))")
            return
        }
        #expect(path == location.directory.path)
        #expect(detail.contains("chmod 700"))
    }

    @Test("a database file with mode 0644 is refused")
    func openFile() throws {
        let location = try makeStoreThenClose()
        defer { try? FileManager.default.removeItem(at: location.directory) }
        #expect(chmod(location.databasePath, 0o644) == 0)
        let error = thrownError { try TouchgateDatabase(location: location) }
        guard case let .unsafePermissions(path, detail)? = error as? StoreError else {
            Issue.record("expected unsafePermissions, got \(String(describing: error))")
            return
        }
        #expect(path == location.databasePath)
        #expect(detail.contains("chmod 600"))
        // Put right, it opens again and the vault is there.
        #expect(chmod(location.databasePath, 0o600) == 0)
        #expect(try Vault.exists(in: TouchgateDatabase(location: location)))
    }

    @Test("a new store is created private: directory 0700, database 0600")
    func createdPrivate() throws {
        let store = try TemporaryStore()
        try Vault.create(database: store.database, passphrase: secret("pw"), kdf: .minimum)
        var info = stat()
        #expect(stat(store.location.directory.path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(stat(store.location.databasePath, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }
}
