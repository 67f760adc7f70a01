import FoundationEssentials
import TouchgateVault
import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// Who a request acts for: an OS user, identified by uid and login name.
///
/// The service never reads the process's own identity: the CLI passes ``current()``,
/// a daemon passes the peer it authenticated. Vault items, prints and audit records
/// are kept under ``loginName``.
public struct Principal: Sendable, Equatable, CustomStringConvertible {
    /// The numeric user id.
    public let uid: UInt32
    /// The login name from the password database (`#<uid>` when it has none).
    public let loginName: String

    /// A principal with these ids.
    public init(uid: UInt32, loginName: String) {
        self.uid = uid
        self.loginName = loginName
    }

    /// The real user of this process.
    public static func current() -> Principal {
        let uid = UInt32(getuid())
        return Principal(uid: uid, loginName: UserDatabase.loginName(of: uid))
    }

    /// `uid=1000(alice)`, as audit records name who acted.
    public var description: String { "uid=\(uid)(\(loginName))" }
}
