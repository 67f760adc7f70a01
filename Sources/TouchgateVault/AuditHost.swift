import TouchgateBasics
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

    /// The kernel's boot id (read once per process), or "unknown".
    private static var bootID: String { SystemClock.currentBootID?.rawValue ?? "unknown" }

    /// The acting process and boot: this process, or the client in ``AuditClient/current``.
    static func current() -> AuditHost {
        let requester = Requester.current.map(AuditClient.cleanRequester)
        if let client = AuditClient.current {
            return AuditHost(uid: client.uid, loginName: client.loginName, bootID: bootID,
                             via: [client.process, requester].compactMap { $0 }.joined(separator: ", "))
        }
        let uid = UInt32(getuid())
        return AuditHost(uid: uid, loginName: UserDatabase.loginName(of: uid), bootID: bootID, via: requester)
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

    /// The longest requester text kept in a record.
    public static let maximumRequesterBytes = 512

    /// `text` fit for a record: control characters escaped, cut to ``maximumRequesterBytes``.
    static func cleanRequester(_ text: String) -> String {
        var kept = ""
        for scalar in text.unicodeScalars {
            let piece = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
            guard kept.utf8.count + piece.utf8.count <= maximumRequesterBytes else { break }
            kept += piece
        }
        return kept
    }
}
