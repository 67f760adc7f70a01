/// What one successful prune removed, as its `audit.prune` record says it.
///
/// The record's reason is covered by both chains, so whoever checks an export with the
/// public key alone can trust it and see where a pruned trail legitimately begins: the
/// record after ``through``. The wording is fixed here, in one place, for the writer
/// (``AuditLog/prune(before:keepingYears:evenUnshipped:vaultUser:)``) and the reader.
public struct AuditPruneSummary: Sendable, Equatable {
    /// How many records the prune removed.
    public let removed: Int
    /// The sequence of the last record it removed.
    public let through: Int64

    /// A summary of a prune that removed `removed` records up to `through`.
    public init(removed: Int, through: Int64) {
        self.removed = removed
        self.through = through
    }

    /// The summary in `record`, when it is a successful `audit.prune` that removed records.
    public init?(_ record: AuditRecord) {
        guard record.event == .auditPrune, record.outcome == .success else { return nil }
        self.init(reason: record.reason)
    }

    /// Reads the start of a prune record's reason: `removed N records up to #S`.
    init?(reason: String) {
        let words = reason.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: false)
        guard words.count == 6, words[0] == "removed", words[2] == "records", words[3] == "up", words[4] == "to",
              let removed = Int(words[1]), removed > 0 else { return nil }
        // "#S", then "," and the cutoff, or the end of the reason.
        let rest = words[5]
        guard rest.hasPrefix("#") else { return nil }
        let digits = rest.dropFirst().prefix { $0.isNumber && $0.isASCII }
        guard let through = Int64(digits), through > 0 else { return nil }
        self.init(removed: removed, through: through)
    }

    /// The words the prune record starts its reason with.
    var reason: String { "removed \(removed) records up to #\(through)" }
}
