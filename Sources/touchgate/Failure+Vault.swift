import TouchgatePolicy
import TouchgateVault

extension Failure {
    /// The vault key is not in the keyring.
    static let vaultLocked = Failure(code: "vault-locked", message: "vault locked: run touchgate unlock",
                                     status: Exit.authentication)

    /// Maps errors of the policy core, the vault and the audit log; nil for anything else.
    static func fromVaultLayers(_ error: any Error) -> Failure? {
        switch error {
        case let error as AuthorizationError:
            return authorization(error)
        case let error as VaultError:
            return vault(error)
        case let error as AuditError:
            return Failure(code: "audit-error", message: error.description, status: Exit.dataError)
        case let error as PassphraseInputError:
            if case .noTerminal = error {
                return Failure(code: "passphrase-required", message: error.description, status: Exit.authentication)
            }
            return Failure(code: "passphrase-input", message: error.description, status: Exit.authentication)
        default:
            return nil
        }
    }

    /// A refusal by the policy core: its user message and the documented status.
    static func authorization(_ error: AuthorizationError) -> Failure {
        let message = error.userMessage
        switch error {
        case .authenticationFailed(.noMatch):
            return Failure(code: "no-match", message: message, status: Exit.noMatch)
        case .authenticationFailed(.wrongPassphrase):
            return Failure(code: "wrong-passphrase", message: message, status: Exit.authentication)
        case .authenticationFailed(.poorCapture), .authenticationFailed(.timedOut):
            return .readerError(message)
        case .cancelled:
            return .cancelled
        case .readerUnavailable:
            return .noReader(message)
        case .readerDisconnected:
            return Failure(code: "disconnected", message: message, status: Exit.disconnected)
        case .nothingEnrolled:
            return .nothingEnrolled(message)
        case .lockedOut:
            return Failure(code: "locked-out", message: message, status: Exit.lockedOut)
        case .itemInvalidated:
            return Failure(code: "item-invalidated", message: message, status: Exit.authentication)
        case .passphraseRequired:
            return Failure(code: "passphrase-required",
                           message: message + " Without a terminal, pass it with --passphrase-fd N.",
                           status: Exit.authentication)
        case .stateUnavailable:
            return .dataError(message)
        }
    }

    /// A vault error: authentication problems are 8, the rest data errors.
    static func vault(_ error: VaultError) -> Failure {
        switch error {
        case .wrongPassphrase:
            return Failure(code: "wrong-passphrase", message: "wrong passphrase; nothing was changed",
                           status: Exit.authentication)
        case .locked:
            return .vaultLocked
        case .itemInvalidated:
            return Failure(code: "item-invalidated", message: error.description, status: Exit.authentication)
        case .notInitialized(let directory):
            return Failure(code: "no-vault", message: "there is no vault in \(directory) yet; run: touchgate init",
                           status: Exit.dataError)
        case .alreadyInitialized(let directory):
            return Failure(code: "already-initialized",
                           message: "a vault already exists in \(directory); nothing was changed (to change its passphrase, run: touchgate passphrase change)",
                           status: Exit.dataError)
        case .itemNotFound(let name):
            return Failure(code: "not-found", message: "there is no secret named '\(name)'; see: touchgate secret list",
                           status: Exit.dataError)
        case .integrity:
            return Failure(code: "integrity", message: error.description, status: Exit.dataError)
        case .invalidArgument:
            return .usage(error.description)
        case .keyDerivationFailed, .system:
            return Failure(code: "error", message: error.description, status: Exit.readerError)
        }
    }
}
