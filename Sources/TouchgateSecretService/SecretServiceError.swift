import TouchgateAPI

/// An error answered to a Secret Service client: a D-Bus error name and a message a person
/// can act on (never a secret).
struct SecretServiceError: Error, Sendable, Equatable {
    let name: String
    let message: String

    static func isLocked(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.Secret.Error.IsLocked", message: message)
    }
    static func noSession(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.Secret.Error.NoSession", message: message)
    }
    static func noSuchObject(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.Secret.Error.NoSuchObject", message: message)
    }
    static func invalidArguments(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }
    static func notSupported(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.DBus.Error.NotSupported", message: message)
    }
    static func unknownMethod(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: message)
    }
    static func accessDenied(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.DBus.Error.AccessDenied", message: message)
    }
    static func failed(_ message: String) -> SecretServiceError {
        SecretServiceError(name: "org.freedesktop.DBus.Error.Failed", message: message)
    }

    /// The service's refusal as a client sees it: a locked vault is `IsLocked`, a missing
    /// item `NoSuchObject`, everything else `AccessDenied` or `Failed` with the service's message.
    static func from(_ error: ServiceError) -> SecretServiceError {
        switch error.code {
        case .vaultLocked: .isLocked(error.message)
        case .notFound: .noSuchObject(error.message)
        case .noMatch, .lockedOut, .forbidden, .cancelled, .declined, .remoteSession, .itemInvalidated:
            .accessDenied(error.message)
        case .usage: .invalidArguments(error.message)
        default: .failed(error.message)
        }
    }
}
