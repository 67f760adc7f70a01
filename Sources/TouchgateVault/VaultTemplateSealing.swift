import CSodium
import GRDB

/// Seals print templates under a key derived from the vault key (``TemplateSealing`` for ``PrintStore``).
///
/// Stored form: a version byte (``version``), a random 24-byte nonce, then the
/// XChaCha20-Poly1305 ciphertext and tag, bound to the print's context (user, finger,
/// reader). The template key is `crypto_kdf_derive_from_key(vault key, id 1, "tgtempl1")`,
/// so it survives passphrase changes like the vault key does.
///
/// Get one through ``Vault/templateSealing(key:)`` or ``Vault/templateSealing(for:key:)``,
/// which know whether the store's templates are sealed yet.
public struct VaultTemplateSealing: TemplateSealing {
    /// First byte of every sealed template. A plaintext libfprint print starts with `F` (`FP3…`).
    public static let version: UInt8 = 0x01

    private let key: SecureBytes

    /// A sealer with the template key derived from `vaultKey`.
    public init(vaultKey: VaultKey) {
        key = SecureBytes.make(count: SecretBox.keyBytes) { out in
            let status = vaultKey.bytes.withUnsafeBytes { master in
                crypto_kdf_derive_from_key(out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
                                           1, "tgtempl1", master.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            precondition(status == 0, "crypto_kdf_derive_from_key failed")
        }
    }

    private static func associatedData(_ context: String) -> [UInt8] {
        var ad = AssociatedData(domain: "touchgate/template/v1")
        ad.append(context)
        return ad.bytes
    }

    /// Seals `template` with a fresh nonce, bound to `context`.
    public func seal(_ template: [UInt8], context: String) throws -> [UInt8] {
        let sealed = template.withUnsafeBytes {
            SecretBox.seal($0, key: key, associatedData: Self.associatedData(context))
        }
        return [Self.version] + sealed.nonce + sealed.ciphertext
    }

    /// Opens a sealed template.
    /// - Throws: ``VaultError/integrity(what:)`` when it is not sealed, was sealed for
    ///   another context, or was altered.
    public func open(_ stored: [UInt8], context: String) throws -> [UInt8] {
        let header = 1 + SecretBox.nonceBytes
        guard stored.count >= header + SecretBox.tagBytes, stored[0] == Self.version,
              let plain = SecretBox.open(nonce: Array(stored[1..<header]), ciphertext: Array(stored[header...]),
                                         key: key, associatedData: Self.associatedData(context))
        else {
            throw VaultError.integrity(what: "a stored fingerprint template (\(context))")
        }
        return plain.withUnsafeBytes { Array($0) }
    }
}

extension Vault {
    /// The sealing ``PrintStore`` must use with this vault. Seals any templates still
    /// stored in plaintext first (normally done by ``create(database:passphrase:kdf:owner:)``).
    public func templateSealing(key: VaultKey) throws -> VaultTemplateSealing {
        check(key)
        if try !currentMeta().templatesSealed {
            try database.writer.write { db in try Self.sealPlaintextTemplates(db, key: key) }
        }
        return VaultTemplateSealing(vaultKey: key)
    }

    /// The sealing ``PrintStore`` must use with `database`: plaintext while no vault
    /// exists, the vault's template sealing once one does.
    /// - Throws: ``VaultError/locked`` when a vault exists and `key` is `nil`.
    public static func templateSealing(for database: TouchgateDatabase, key: VaultKey?) throws -> any TemplateSealing {
        guard try exists(in: database) else { return PlaintextTemplates() }
        guard let key else { throw VaultError.locked }
        return try open(database: database).templateSealing(key: key)
    }

    /// Seals every plaintext template and sets the `templates_sealed` marker, inside the
    /// caller's write transaction (so either all prints are sealed and marked, or none).
    /// Does nothing once the marker is set.
    static func sealPlaintextTemplates(_ db: Database, key: VaultKey) throws {
        guard try Bool.fetchOne(db, sql: "SELECT templates_sealed FROM vault_meta WHERE id = 1") == false else { return }
        try PrintStore.resealTemplates(db, from: PlaintextTemplates(), to: VaultTemplateSealing(vaultKey: key))
        try db.execute(sql: "UPDATE vault_meta SET templates_sealed = 1 WHERE id = 1")
    }
}
