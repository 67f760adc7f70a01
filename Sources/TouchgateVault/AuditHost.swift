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

    /// The acting process and boot: the client a request's database handle was opened for
    /// (``TouchgateDatabase/serving(_:)``), or this process.
    static func of(_ client: AuditClient?) -> AuditHost {
        if let client {
            return AuditHost(uid: client.uid, loginName: client.loginName, bootID: bootID,
                             via: [client.process, client.requester.map(AuditClient.cleanRequester)]
                                .compactMap { $0 }.joined(separator: ", "))
        }
        let uid = UInt32(getuid())
        return AuditHost(uid: uid, loginName: UserDatabase.loginName(of: uid), bootID: bootID, via: nil)
    }
}

/// The caller a request is served for: records written in that request name the caller's
/// uid (from `SO_PEERCRED`, or the bus) rather than the serving process's, the process and
/// the door it asked through, and what the door or a helper said of the program it serves,
/// so a trail says who asked and how, not only that a host wrote.
public struct AuditClient: Sendable, Equatable {
    /// The client's uid.
    public var uid: UInt32
    /// Its login name.
    public var loginName: String
    /// Which process asked, and through which door (`pid 41 /usr/bin/ssh at touchgate agent's SSH socket`).
    public var process: String
    /// What the door or a helper said of the program it serves, cleaned and cut when written.
    public var requester: String?

    /// A client.
    public init(uid: UInt32, loginName: String, process: String, requester: String? = nil) {
        self.uid = uid
        self.loginName = loginName
        self.process = process
        self.requester = requester
    }

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
