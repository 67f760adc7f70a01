#if canImport(Glibc)
import Glibc
#endif

/// Errors from the vault: its keys, items, sessions and sealed templates.
///
/// Every message says what to do next. None contains a passphrase, key, item value
/// or template; item names and user names are not secret and may appear.
public enum VaultError: Error, Equatable, CustomStringConvertible {
    /// No vault has been created in this data directory.
    case notInitialized(directory: String)
    /// A vault already exists here; creating another would orphan its items.
    case alreadyInitialized(directory: String)
    /// The passphrase did not open the vault key. Also reported when the stored wrapped
    /// key or its KDF parameters were altered: the two are indistinguishable by design.
    case wrongPassphrase
    /// The vault key is not in the kernel keyring (never unlocked, locked, idle timeout,
    /// passphrase too old, or a reboot).
    case locked
    /// No item with this name.
    case itemNotFound(name: String)
    /// The item was bound to the enrolled fingers, which changed: its key was destroyed.
    case itemInvalidated(name: String)
    /// Stored ciphertext, nonce, wrapped key or an authenticated column was altered.
    /// `what` names the record (an item name, a template's owner), never its content.
    case integrity(what: String)
    /// Argon2id could not run with these parameters (usually not enough memory).
    case keyDerivationFailed(parameters: String)
    /// A caller-supplied value is unusable (an empty passphrase or name).
    case invalidArgument(String)
    /// A kernel call failed (keyring, process hardening, boot clock).
    case system(operation: String, code: Int32)
    /// The TPM the vault is bound to refused (its dictionary-attack lockout), could not be
    /// reached, or does not hold the vault's secret (cleared, replaced, another machine).
    case tpm(String)
    /// The TPM's dictionary-attack lockout is on: it refuses even the right passphrase for
    /// now (the message says for about how long).
    case tpmLockedOut(String)
    /// This process's kernel keyring cannot keep the vault key: its session keyring was
    /// revoked (the login it belonged to ended, as under a tmux that outlived it).
    case keyringUnusable

    /// A message for the user, saying what to do.
    public var description: String {
        switch self {
        case let .notInitialized(directory):
            return "there is no vault in \(directory) yet; run `touchgate init` to create one"
        case let .alreadyInitialized(directory):
            return "a vault already exists in \(directory); nothing was changed (to change its passphrase, run `touchgate passwd`)"
        case .wrongPassphrase:
            return "wrong passphrase; try again"
        case .locked:
            return "the vault is locked; run `touchgate unlock`"
        case let .itemNotFound(name):
            return "there is no item named \"\(name)\"; run `touchgate list` to see the stored items"
        case let .itemInvalidated(name):
            return "item \"\(name)\" was bound to the enrolled fingers, which have changed since; its key has been destroyed and it cannot be recovered: store it again"
        case let .integrity(what):
            return "\(what) has been altered on disk (integrity check failed); restore the database from a backup, or delete the damaged record"
        case let .keyDerivationFailed(parameters):
            return "cannot derive the key with \(parameters); free some memory and try again"
        case let .invalidArgument(detail):
            return detail
        case let .system(operation, code):
            return "cannot \(operation): \(String(cString: strerror(code)))"
        case let .tpm(detail), let .tpmLockedOut(detail):
            return detail
        case .keyringUnusable:
            return "this session's kernel keyring cannot keep the vault key: the login session it belongs to has ended "
                + "(a tmux or screen that outlived the login that started it keeps such a keyring); "
                + "run the command again from a new login, or in a fresh session keyring (keyctl new_session, "
                + "from the keyutils package)"
        }
    }
}
