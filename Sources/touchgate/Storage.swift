import Foundation
import TouchgateVault

/// Opens Touchgate's data for a command.
///
/// Before `touchgate init` templates are stored in the clear; once a vault exists they
/// are sealed under a key derived from the vault key, so anything that reads a template
/// needs the vault unlocked (the key in the kernel keyring).
enum Storage {
    /// The database at `$XDG_DATA_HOME/touchgate`.
    static func database() throws -> TouchgateDatabase {
        try TouchgateDatabase(location: StoreLocation.fromEnvironment())
    }

    /// The keyring session of `vault`, with the same timeouts in every command.
    static func session(_ vault: Vault) -> VaultSession {
        VaultSession(vault: vault)
    }

    /// The print store, able to read templates: sealed with the vault's key once a vault exists.
    /// - Throws: ``Failure/vaultLocked`` when a vault exists and is locked.
    static func printStore() throws -> PrintStore {
        try printStore(database: database())
    }

    /// As ``printStore()`` over an open database.
    static func printStore(database: TouchgateDatabase) throws -> PrintStore {
        guard try Vault.exists(in: database) else { return PrintStore(database: database) }
        let vault = try Vault.open(database: database)
        guard let key = try session(vault).currentKey() else { throw Failure.vaultLocked }
        return PrintStore(database: database, sealing: try vault.templateSealing(key: key))
    }

    /// The print store for listing: names, fingers and readers, never templates, so it
    /// works while the vault is locked.
    static func printIndex(database: TouchgateDatabase) -> PrintStore {
        PrintStore(database: database, sealing: TemplatesWithheld())
    }
}

/// A sealing that never yields a template: listings need only the other columns.
struct TemplatesWithheld: TemplateSealing {
    struct Refused: Error {}

    func seal(_ template: [UInt8], context: String) throws -> [UInt8] { throw Refused() }
    func open(_ stored: [UInt8], context: String) throws -> [UInt8] { [] }
}
