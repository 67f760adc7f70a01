#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system's password database (`/etc/passwd` and whatever NSS adds): the one place
/// Touchgate turns a user id into a login name.
///
/// Audit records, the vault's default owner and the service's principals all name users
/// through it, so one uid always gets the same name.
public enum UserDatabase {
    /// The login name of `uid`, or `#<uid>` (`#1000`) when the password database has no
    /// entry for it or cannot be read.
    ///
    /// Thread-safe (`getpwuid_r`, with a buffer grown as needed up to 1 MiB); may block
    /// while NSS asks a directory service.
    public static func loginName(of uid: UInt32) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        while true {
            let status = getpwuid_r(uid_t(uid), &entry, &buffer, buffer.count, &result)
            if status == ERANGE && buffer.count < 1 << 20 {
                buffer = [CChar](repeating: 0, count: buffer.count * 4)
                continue
            }
            guard status == 0, result != nil, let name = entry.pw_name else { return "#\(uid)" }
            return String(cString: name)
        }
    }

    /// The uid of the login `name`, or nil when the password database has none.
    public static func uid(of name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        while true {
            let status = getpwnam_r(name, &entry, &buffer, buffer.count, &result)
            if status == ERANGE && buffer.count < 1 << 20 {
                buffer = [CChar](repeating: 0, count: buffer.count * 4)
                continue
            }
            guard status == 0, result != nil else { return nil }
            return UInt32(entry.pw_uid)
        }
    }
}
