import Foundation
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
        let uid = getuid()
        return Principal(uid: UInt32(uid), loginName: loginName(of: uid))
    }

    /// `uid=1000(alice)`, as audit records name who acted.
    public var description: String { "uid=\(uid)(\(loginName))" }

    /// The password database's name for `uid` (getpwuid_r, growing the buffer as needed).
    static func loginName(of uid: uid_t) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        while true {
            let status = getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
            if status == ERANGE && buffer.count < 1 << 20 {
                buffer = [CChar](repeating: 0, count: buffer.count * 4)
                continue
            }
            guard status == 0, result != nil, let name = entry.pw_name else { return "#\(uid)" }
            return String(cString: name)
        }
    }
}
