import CSodium
import TouchgateBasics

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

    private let key: SecretBytes

    /// A sealer with the template key derived from `vaultKey`.
    public init(vaultKey: VaultKey) {
        key = SecretBytes.make(count: SecretBox.keyBytes) { out in
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

    /// Whether `stored` is a template sealed under this key for `context`.
    func opens(_ stored: [UInt8], context: String) -> Bool {
        (try? open(stored, context: context)) != nil
    }
}

extension Vault {
    /// The sealing ``PrintStore`` must use with this vault. Seals any templates still
    /// stored in plaintext first (normally done by ``create(database:passphrase:kdf:owner:)``).
    ///
    /// Sealing writes `templates_sealed`, part of the authenticated state, so it checks
    /// that state first and updates the audit head in the same transaction. Each template
    /// is examined on its own (see ``PrintStore``'s sealing rule), so a flipped marker can
    /// never seal a template twice.
    /// - Throws: ``IntegrityError/stateTampered(detail:)`` when the state was edited
    ///   (nothing is sealed), ``VaultError/integrity(what:)`` for a damaged sealed template,
    ///   ``AuditError`` when the audit log cannot be opened.
    public func templateSealing(key: VaultKey) throws -> VaultTemplateSealing {
        check(key)
        let sealing = VaultTemplateSealing(vaultKey: key)
        if try !currentMeta().templatesSealed {
            let log = try AuditLog(database: database)
            try database.writeImmediately { db in
                let head = try log.requireAuthenticState(db)
                try requireSameVault(db)
                guard try MetaRecord.fetch(db)?.templatesSealed == false else { return }  // another process did it
                try Self.sealPlaintextTemplates(db, with: sealing)
                try log.saveState(db, head: head)
            }
        }
        return sealing
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
    /// The caller checks the authenticated state before and saves it after.
    static func sealPlaintextTemplates(_ db: Database, with sealing: VaultTemplateSealing) throws {
        try PrintStore.sealPlaintextTemplates(db, with: sealing)
        try db.execute(sql: "UPDATE vault_meta SET templates_sealed = 1 WHERE id = 1")
    }
}
