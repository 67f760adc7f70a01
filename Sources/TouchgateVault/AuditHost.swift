import TouchgatePolicy
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Facts about the writing process and machine that every audit record carries.
struct AuditHost: Sendable {
    /// The real uid of this process.
    var uid: UInt32
    /// Its name in the password database, or `#<uid>` when it has none.
    var loginName: String
    /// The kernel's id for this boot, or `unknown` when /proc is not mounted.
    var bootID: String

    /// The current process and boot. The boot id and login name cannot change while the
    /// process runs, so they are read once.
    static func current() -> AuditHost {
        let uid = UInt32(getuid())
        return AuditHost(uid: uid, loginName: UserDatabase.loginName(of: uid),
                         bootID: SystemClock.readBootID()?.rawValue ?? "unknown")
    }
}
