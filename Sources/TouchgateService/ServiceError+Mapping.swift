import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

extension ServiceError {
    /// The vault key is not held.
    static let vaultLocked = ServiceError(.vaultLocked, "vault locked: run touchgate unlock")

    /// A request that makes no sense (a value out of range, a bad name).
    static func usage(_ message: String) -> ServiceError { ServiceError(.usage, message) }
    /// No reader, or it cannot be opened.
    static func noReader(_ message: String) -> ServiceError { ServiceError(.noReader, message) }
    /// Nothing enrolled that could match.
    static func nothingEnrolled(_ message: String) -> ServiceError { ServiceError(.nothingEnrolled, message) }
    /// The reader failed.
    static func readerError(_ message: String) -> ServiceError { ServiceError(.readerError, message) }
    /// Stored data cannot be used.
    static func dataError(_ message: String) -> ServiceError { ServiceError(.dataError, message) }

    /// Every error from the layers below, as the one typed error the service throws.
    /// This is the only place lower-layer errors are translated.
    static func from(_ error: any Error) -> ServiceError {
        switch error {
        case let error as ServiceError: return error
        case is CancellationError: return .cancelled
        case let error as AuthorizationError: return authorization(error)
        case let error as VaultError: return vault(error)
        case let error as FingerprintError:
            switch error {
            case .device(.removed, _): return ServiceError(.disconnected, error.description)
            case .invalidPrintData: return .dataError(error.description)
            default: return .readerError(error.description)
            }
        case let error as StoreError:
            if case .alreadyEnrolled = error { return ServiceError(.alreadyEnrolled, error.description) }
            if case .noSpace = error { return ServiceError(.diskFull, error.description) }
            return .dataError(error.description)
        case let error as IntegrityError:
            return ServiceError(.stateTampered, error.description)
        case let error as TPMError:
            if case .lockout = error { return ServiceError(.lockedOut, error.description) }
            return ServiceError(.tpmUnavailable, error.description)
        case let error as ConflictError:
            return ServiceError(.conflict, error.description)
        case let error as AuditError:
            if case .wiped = error { return ServiceError(.auditBroken, error.description) }
            if case .withinRetention = error { return ServiceError(.retention, error.description) }
            if case .unshipped = error { return ServiceError(.retention, error.description) }
            return ServiceError(.auditError, error.description)
        default:
            return ServiceError(.error, String(describing: error))
        }
    }

    /// A refusal by the policy core, with the figures a script needs.
    static func authorization(_ error: AuthorizationError) -> ServiceError {
        let message = error.userMessage
        switch error {
        case .authenticationFailed(.noMatch(let left)):
            return ServiceError(.noMatch, message, attemptsLeft: left)
        case .authenticationFailed(.wrongPassphrase):
            return ServiceError(.wrongPassphrase, message)
        case .authenticationFailed(.poorCapture), .authenticationFailed(.timedOut):
            return .readerError(message)
        case .cancelled:
            return .cancelled
        case .readerUnavailable:
            return .noReader(message)
        case .readerDisconnected:
            return ServiceError(.disconnected, message)
        case .nothingEnrolled:
            return .nothingEnrolled(message)
        case .lockedOut(let info):
            let seconds = info.remaining.map { Int($0.components.seconds) + ($0.components.attoseconds > 0 ? 1 : 0) }
            return ServiceError(.lockedOut, message, retryAfterSeconds: info.passphraseOnly ? nil : seconds)
        case .itemInvalidated:
            return ServiceError(.itemInvalidated, message)
        case .passphraseRequired:
            return ServiceError(.passphraseRequired, message + " Without a terminal, pass it with --passphrase-fd N.")
        case .stateUnavailable:
            return .dataError(message)
        }
    }

    /// A vault error: authentication problems are 8, the rest data errors.
    static func vault(_ error: VaultError) -> ServiceError {
        switch error {
        case .wrongPassphrase:
            return ServiceError(.wrongPassphrase, "wrong passphrase; nothing was changed")
        case .locked:
            return .vaultLocked
        case .itemInvalidated:
            return ServiceError(.itemInvalidated, error.description)
        case .notInitialized(let directory):
            return ServiceError(.noVault, "there is no vault in \(directory) yet; run: touchgate init")
        case .alreadyInitialized(let directory):
            return ServiceError(.alreadyInitialized,
                                "a vault already exists in \(directory); nothing was changed "
                                    + "(to change its passphrase, run: touchgate passphrase change)")
        case .itemNotFound(let name):
            return ServiceError(.notFound, "there is no secret named '\(StoredText.escaped(name))'; see: touchgate secret list")
        case .integrity:
            return ServiceError(.integrity, error.description)
        case .invalidArgument:
            return .usage(error.description)
        case .keyDerivationFailed, .system, .keyringUnusable:
            return ServiceError(.error, error.description)
        case .tpmLockedOut:
            return ServiceError(.lockedOut, error.description)
        case .tpm:
            return ServiceError(.tpmUnavailable, error.description)
        }
    }
}

/// Runs `body`, turning whatever it throws into a ``ServiceError``.
func serviceErrors<T>(_ body: () async throws -> T) async throws(ServiceError) -> T {
    do {
        return try await body()
    } catch {
        throw ServiceError.from(error)
    }
}

/// Runs `body` on the store in `directory` as ``serviceErrors(_:)`` does; a write that
/// failed for want of room there (SQLite's own words are "database or disk is full", or a
/// bare "disk I/O error" for a used-up quota) becomes `disk-full`, naming the directory.
func serviceErrors<T>(storeIn directory: String, _ body: () async throws -> T) async throws(ServiceError) -> T {
    do {
        return try await body()
    } catch {
        if DiskSpace.isExhausted(error, directory: directory) {
            throw ServiceError.from(StoreError.noSpace(directory: directory))
        }
        throw ServiceError.from(error)
    }
}
