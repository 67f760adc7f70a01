import TouchgateAPI
import TouchgateTerminal
import TouchgatePolicy

/// A policy given on the command line, checked before anything is read or asked (the
/// service checks it again when it stores).
enum PolicyText {
    /// Checks a policy in string form (`biometry-any`, `a|b`, `a&b`, …).
    /// - Throws: ``ServiceError`` (usage) saying what is wrong with it.
    static func check(_ text: String) throws(ServiceError) {
        do {
            _ = try AccessPolicy(parsing: text)
        } catch {
            throw ServiceError.invalidPolicy(error)
        }
    }
}
