import TouchgatePolicy
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Facts about the writing process and machine that every audit record carries.
struct AuditHost: Sendable {
    /// Who acted: the real uid of this process, or the client a daemon serves.
    var uid: UInt32
    /// Its name in the password database, or `#<uid>` when it has none.
    var loginName: String
    /// The kernel's id for this boot, or `unknown` when /proc is not mounted.
    var bootID: String
    /// For a daemon's client: which process asked (`pid 123, /usr/bin/touchgate`), added
    /// to each record's reason.
    var via: String?

    /// The acting process and boot: this process, or the client in ``AuditClient/current``.
    static func current() -> AuditHost {
        let bootID = SystemClock.readBootID()?.rawValue ?? "unknown"
        if let client = AuditClient.current {
            return AuditHost(uid: client.uid, loginName: client.loginName, bootID: bootID, via: client.process)
        }
        let uid = UInt32(getuid())
        return AuditHost(uid: uid, loginName: UserDatabase.loginName(of: uid), bootID: bootID)
    }
}

/// The client a daemon acts for while it serves one request: records written in that
/// request name the client's uid (from `SO_PEERCRED`) rather than the daemon's, and the
/// client process, so a trail says who asked, not only that the daemon wrote.
public struct AuditClient: Sendable, Equatable {
    /// The client's uid.
    public var uid: UInt32
    /// Its login name.
    public var loginName: String
    /// Which process asked: its pid and executable as `/proc` showed them when it connected.
    public var process: String

    /// A client.
    public init(uid: UInt32, loginName: String, process: String) {
        self.uid = uid
        self.loginName = loginName
        self.process = process
    }

    /// The client of the request running in this task, if a daemon set one.
    @TaskLocal public static var current: AuditClient?
}
