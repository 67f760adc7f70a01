import CSodium
import FoundationEssentials
import TouchgatePolicy
#if canImport(Glibc)
import Glibc
#endif

/// Sends a copy of each audit record to the system journal (journald), best effort.
///
/// Uses journald's native protocol: one datagram to its Unix socket holding
/// newline-separated `KEY=value` fields. Besides `MESSAGE`, `PRIORITY` and
/// `SYSLOG_IDENTIFIER=touchgate` it carries a `MESSAGE_ID` stable per event type
/// (``messageID(for:)``) and `TOUCHGATE_EVENT`, `TOUCHGATE_OUTCOME`, `TOUCHGATE_SEQ`,
/// `TOUCHGATE_UID`, `TOUCHGATE_USER` (the writer's uid and login), `TOUCHGATE_ITEM`,
/// `TOUCHGATE_VAULT_USER`, `TOUCHGATE_REASON`, `TOUCHGATE_BOOT_TIME`, `TOUCHGATE_MAC` and
/// `TOUCHGATE_CHAIN` (the public link, ``AuditSeal``) (absent values are omitted), so
/// `journalctl MESSAGE_ID=…`, `journalctl TOUCHGATE_EVENT=auth.attempt` or
/// `journalctl SYSLOG_IDENTIFIER=touchgate` finds them with no parsing, and a forwarder
/// passes them on as fields.
/// The journal is a second witness outside the database: it still holds records after
/// the whole database was rolled back to an old copy, which the chain cannot detect.
///
/// A missing socket, a full journal or any send error is ignored: journald is a copy,
/// the database is the record. Sends never block.
public struct AuditJournal: Sendable {
    /// Where journald listens on a systemd machine.
    public static let defaultSocketPath = "/run/systemd/journal/socket"
    /// The `MESSAGE_ID` of records of `event`: 32 lowercase hex digits, the unkeyed
    /// BLAKE2b-128 of `touchgate.audit:` and the event's name. Stable across releases and
    /// machines, and computable for any event (`docs/AUDIT-FORMATS.md` lists those of the
    /// events Touchgate writes).
    public static func messageID(for event: AuditEvent) -> String {
        let name = Array(("touchgate.audit:" + event.rawValue).utf8)
        var out = [UInt8](repeating: 0, count: 16)
        _ = crypto_generichash(&out, out.count, name, UInt64(name.count), nil, 0)
        return Hex.encode(out)
    }

    /// The datagram socket to send to; `nil` disables sending.
    public let socketPath: String?

    /// A journal at `socketPath` (tests bind their own datagram socket); `nil` sends nothing.
    public init(socketPath: String?) {
        self.socketPath = socketPath
    }

    /// journald at ``defaultSocketPath``.
    public static let system = AuditJournal(socketPath: defaultSocketPath)
    /// Sends nothing.
    public static let disabled = AuditJournal(socketPath: nil)

    /// The journal fields for `record`, in order.
    static func fields(for record: AuditRecord) -> [(String, String)] {
        var message = "touchgate audit #\(record.sequence): \(record.event) \(record.outcome)"
        if let user = record.vaultUser { message += " vault user \(user)" }
        if let item = record.item { message += " item \(item)" }
        if !record.reason.isEmpty { message += ": \(record.reason)" }
        var fields: [(String, String)] = [
            ("MESSAGE", message),
            ("MESSAGE_ID", messageID(for: record.event)),
            ("PRIORITY", String(priority(for: record))),
            ("SYSLOG_IDENTIFIER", "touchgate"),
            ("TOUCHGATE_EVENT", record.event.rawValue),
            ("TOUCHGATE_OUTCOME", record.outcome.rawValue),
            ("TOUCHGATE_SEQ", String(record.sequence)),
            ("TOUCHGATE_UID", String(record.uid)),
            ("TOUCHGATE_USER", record.loginName),
        ]
        if let item = record.item { fields.append(("TOUCHGATE_ITEM", item)) }
        if let user = record.vaultUser { fields.append(("TOUCHGATE_VAULT_USER", user)) }
        fields.append(("TOUCHGATE_REASON", record.reason))
        fields.append(("TOUCHGATE_BOOT_TIME", String(record.bootTime)))
        fields.append(("TOUCHGATE_MAC", Hex.encode(record.mac)))
        if let chain = record.chain { fields.append(("TOUCHGATE_CHAIN", Hex.encode(chain))) }
        return fields
    }

    /// syslog priority: 2 (crit) for integrity failures, 3 (err) for errors, 4 (warning)
    /// for lockouts, 5 (notice) for failures and denials, 6 (info) otherwise. The one
    /// ranking of records by severity: the OCSF and ECS exports map it too.
    public static func priority(event: AuditEvent, outcome: AuditOutcome) -> Int {
        if event == .integrityFailure { return 2 }
        switch outcome {
        case .error: return 3
        case _ where event == .lockoutStart: return 4
        case .failure, .denied: return 5
        default: return 6
        }
    }

    static func priority(for record: AuditRecord) -> Int {
        priority(event: record.event, outcome: record.outcome)
    }

    /// The native-protocol datagram: `KEY=value\n` per field, or for a value holding a
    /// newline `KEY\n`, its length as 64-bit little-endian, the value, `\n`.
    static func datagram(_ fields: [(String, String)]) -> [UInt8] {
        var out = [UInt8]()
        for (key, value) in fields {
            out.append(contentsOf: key.utf8)
            if value.utf8.contains(UInt8(ascii: "\n")) {
                out.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(value.utf8.count).littleEndian) { out.append(contentsOf: $0) }
            } else {
                out.append(UInt8(ascii: "="))
            }
            out.append(contentsOf: value.utf8)
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    /// Sends `record` if the socket exists; ignores every failure.
    func send(_ record: AuditRecord) {
        guard let socketPath, AuditKey.exists(at: socketPath) else { return }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let payload = Self.datagram(Self.fields(for: record))
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + 1)
        _ = payload.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
    }
}
