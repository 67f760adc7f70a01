/// What a caller asks the audit log to record: names and a short reason, never a value.
///
/// The log adds the sequence number, times, boot id, OS user and chain fields.
/// Text is normalised before it is stored so that a record can always be written
/// (an audit record must not be lost because a name was odd): control characters
/// become U+FFFD, names are cut to ``maximumNameBytes`` and the reason to
/// ``maximumReasonBytes`` UTF-8 bytes, ending in `…` when cut.
/// Callers must never pass a secret, a template or an item's value here.
public struct AuditEntry: Sendable, Equatable {
    /// Longest stored vault-user or item name, in UTF-8 bytes.
    public static let maximumNameBytes = 128
    /// Longest stored reason, in UTF-8 bytes.
    public static let maximumReasonBytes = 256

    /// What happened.
    public var event: AuditEvent
    /// How it ended.
    public var outcome: AuditOutcome
    /// The vault user acting, if known (not the OS user, which the log records itself).
    public var vaultUser: String?
    /// The name of the item concerned, if any; never its value.
    public var item: String?
    /// A short explanation, such as `no match` or `locked out for 15 minutes`.
    public var reason: String

    /// An entry; text is normalised as described on the type.
    public init(event: AuditEvent, outcome: AuditOutcome, vaultUser: String? = nil,
                item: String? = nil, reason: String = "") {
        self.event = event
        self.outcome = outcome
        self.vaultUser = vaultUser.map { Self.clean($0, maximumBytes: Self.maximumNameBytes) }
        self.item = item.map { Self.clean($0, maximumBytes: Self.maximumNameBytes) }
        self.reason = Self.clean(reason, maximumBytes: Self.maximumReasonBytes)
    }

    /// Replaces control characters and cuts `text` to `maximumBytes` UTF-8 bytes on a
    /// character boundary.
    static func clean(_ text: String, maximumBytes: Int) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let isControl = scalar.properties.generalCategory == .control
                || scalar.properties.generalCategory == .lineSeparator
                || scalar.properties.generalCategory == .paragraphSeparator
            scalars.append(isControl ? "\u{FFFD}" : scalar)
        }
        let cleaned = String(scalars)
        guard cleaned.utf8.count > maximumBytes else { return cleaned }
        let ellipsis = "…"
        var result = ""
        var used = 0
        for character in cleaned {
            let size = character.utf8.count
            if used + size + ellipsis.utf8.count > maximumBytes { break }
            result.append(character)
            used += size
        }
        return result + ellipsis
    }
}
