
/// The vault's tables (GRDB migration `v2-vault`).
///
/// - `vault_meta`: one row. The vault id, the Argon2id parameters and salt, the vault
///   key wrapped by the passphrase-derived key (`nonce ‖ ciphertext ‖ tag`), and
///   `templates_sealed`, the marker saying every print template is sealed.
/// - `vault_item`: one row per item. The item key wrapped by the vault key (NULL once
///   destroyed by an enrollment change), the value's nonce and ciphertext, and the
///   authenticated columns (id, owner, name, policy, fresh_touch, enrollment_digest).
/// - `vault_state`: small blobs other layers persist (lockout counters, the last
///   passphrase entry), each updated in one immediate write transaction. Every row and
///   `templates_sealed` are authenticated by a digest in the audit head (``StateDigest``,
///   ``StateStore``).
enum VaultSchema {
    static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2-vault") { db in
            try db.execute(sql: """
                CREATE TABLE vault_meta (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    format INTEGER NOT NULL,
                    vault_id BLOB NOT NULL,
                    kdf_algorithm INTEGER NOT NULL,
                    kdf_opslimit INTEGER NOT NULL,
                    kdf_memlimit INTEGER NOT NULL,
                    kdf_salt BLOB NOT NULL,
                    wrapped_vault_key BLOB NOT NULL,
                    templates_sealed BOOLEAN NOT NULL,
                    created_at DOUBLE NOT NULL,
                    passphrase_changed_at DOUBLE NOT NULL
                );
                CREATE TABLE vault_item (
                    id TEXT PRIMARY KEY NOT NULL,
                    owner TEXT NOT NULL,
                    name TEXT NOT NULL,
                    policy TEXT NOT NULL,
                    fresh_touch BOOLEAN NOT NULL,
                    enrollment_digest BLOB,
                    wrapped_key BLOB,
                    nonce BLOB NOT NULL,
                    ciphertext BLOB NOT NULL,
                    created_at DOUBLE NOT NULL,
                    updated_at DOUBLE NOT NULL,
                    UNIQUE (owner, name)
                );
                CREATE TABLE vault_state (
                    key TEXT PRIMARY KEY NOT NULL,
                    value BLOB NOT NULL,
                    updated_at DOUBLE NOT NULL
                );
                """)
        }
    }

    /// Migration `v8-vault-item-kind`: `vault_item.kind`, what an item is (``ItemKind``):
    /// `secret` for every item stored before, `ssh-key` for a key that signs and is never
    /// released. A kind other than `secret` is authenticated with the item's other columns.
    static func registerItemKinds(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v8-vault-item-kind") { db in
            try db.execute(sql: "ALTER TABLE vault_item ADD COLUMN kind TEXT NOT NULL DEFAULT 'secret'")
        }
    }

    /// Migration `v10-vault-item-details`: `vault_item.details`, what the Secret Service
    /// shows of an item beside its value (its collection, label, lookup attributes and the
    /// programs allowed to read it), as JSON the service owns. Not secret (the specification
    /// lets attributes be searched while locked), but authenticated with the item's other
    /// columns whenever it is set: an edit makes the item fail to open.
    static func registerItemDetails(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v10-vault-item-details") { db in
            try db.execute(sql: "ALTER TABLE vault_item ADD COLUMN details TEXT")
        }
    }

    /// Migration `v11-vault-tpm`: `vault_meta.tpm_binding`, NULL for a vault the
    /// passphrase alone unlocks, else what binds it to a TPM (``TPMBinding``: the sealed
    /// secret, the NV counter and the recovery wrapping). Covered by the state digest, so
    /// that an older row cannot take the TPM out of the way.
    static func registerTPMBinding(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v11-vault-tpm") { db in
            try db.execute(sql: "ALTER TABLE vault_meta ADD COLUMN tpm_binding BLOB")
        }
    }
}

/// What a vault item holds, which decides what may be done with it.
public enum ItemKind: String, Sendable, Equatable, Codable {
    /// A value released to whoever the policy lets read it.
    case secret
    /// An SSH private key: it signs inside the service when the policy allows, and is
    /// never released.
    case sshKey = "ssh-key"
    /// A key OpenSSH reaches through Touchgate's security-key provider (`sk-ssh-ed25519`):
    /// the value is the Ed25519 seed followed by the application it was made for
    /// (`ssh:`); it signs FIDO-style, with user presence and verification flags, and is
    /// never released.
    case sshSecurityKey = "ssh-sk"
    /// An ECDSA P-256 SSH private key (`ecdsa-sha2-nistp256`): the value is the 32-byte
    /// scalar; it signs like ``sshKey`` and is never released.
    case sshECDSAKey = "ssh-ecdsa-p256"
    /// A passkey (a FIDO2 credential): the value is the version, the algorithm, the private
    /// key and the account it is for (site, user); it signs WebAuthn assertions inside the
    /// service after a verification, and is never released.
    case passkey

    /// Whether it is one of the SSH keys the agent offers and `ssh list` shows.
    public var isSSHKey: Bool { self == .sshKey || self == .sshSecurityKey || self == .sshECDSAKey }
}
