import FoundationEssentials
import TouchgateVault
public import TouchgateAPI

/// How long audit records are kept at least: six years (HIPAA 45 CFR 164.316(b)(2)(i)),
/// or longer where root says so. Nothing makes it shorter: `audit prune` refuses any
/// cutoff inside it, with or without `--force`.
///
/// touchgated takes a longer retention with `--audit-retention-years N`, which it hands to
/// every user's service through ``environmentVariable`` (a unit file may set that
/// variable too). In the personal mode the user may set the variable: it can only lengthen
/// what the user's own prunes keep.
public enum AuditRetention {
    /// The variable that carries a longer retention, in whole years.
    public static let environmentVariable = "TOUCHGATE_AUDIT_RETENTION_YEARS"
    /// The shortest retention: six years.
    public static let minimumYears = AuditLog.retentionYears
    /// The longest retention accepted: beyond it a date computation would leave the calendar.
    public static let maximumYears = 1000

    /// The retention this process was configured with: ``environmentVariable`` when it
    /// holds a valid number of years, else ``minimumYears``.
    public static var configuredYears: Int {
        guard let text = Invocation.environment(environmentVariable),
              let years = try? years(parsing: text) else { return minimumYears }
        return years
    }

    /// Reads a retention given by root.
    /// - Throws: ``ServiceError`` `usage` for text that is not a whole number of years from
    ///   ``minimumYears`` to ``maximumYears``, saying which values are allowed.
    public static func years(parsing text: String) throws(ServiceError) -> Int {
        guard let years = Int(text), (minimumYears...maximumYears).contains(years) else {
            throw ServiceError.usage("the audit retention must be a whole number of years from \(minimumYears) "
                                     + "(HIPAA's six) to \(maximumYears), not '\(StoredText.escaped(text))'")
        }
        return years
    }
}
