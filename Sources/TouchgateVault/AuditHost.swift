import Foundation
#if canImport(Glibc)
import Glibc
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
        return AuditHost(uid: uid, loginName: UserDatabase.loginName(of: uid), bootID: bootID())
    }

    private static func bootID() -> String {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
            return "unknown"
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? "unknown" : trimmed
    }
}
