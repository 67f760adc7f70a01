import Foundation
import GRDB

extension Vault {
    /// The `vault_state` key under which the last passphrase entry is kept.
    static let passphraseEntryKey = "vault.passphrase-entered"

    /// When the passphrase was last entered correctly (create, unlock, change), on the boot clock.
    ///
    /// The policy core uses it for "passphrase entered since boot and within 72 hours":
    /// `entry.isRecent(now: try .now(), maximumAge: .seconds(72 * 3600))`.
    /// `nil` if never recorded (or the record is unreadable).
    public func lastPassphraseEntry() throws -> BootInstant? {
        guard let data = try StateStore(database: database).state(Self.passphraseEntryKey) else { return nil }
        return try? JSONDecoder().decode(BootInstant.self, from: data)
    }

    static func recordPassphraseEntry(_ db: Database, _ entry: BootInstant) throws {
        let data = try JSONEncoder().encode(entry)
        try StateStore.update(db, passphraseEntryKey) { $0 = data }
    }
}
