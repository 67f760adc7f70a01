import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What the full Foundation's `localizedDescription` says of an error on Linux, without it
/// (FoundationEssentials has no `localizedDescription`): a `LocalizedError`'s description,
/// else "The operation could not be completed." and the reason, for a file operation's
/// `CocoaError` the sentence swift-corelibs-foundation has for its code.
public enum ErrorText {
    public static func describe(_ error: any Error) -> String {
        // The NSError swift-corelibs-foundation made of it: a CocoaError or POSIXError in
        // its domain, any other error in its type's (`_domain`, `_code`).
        let (domain, code, info): (String, Int, [String: Any]) = switch error {
        case let cocoa as CocoaError: ("NSCocoaErrorDomain", cocoa.code.rawValue, cocoa.userInfo)
        case let posix as POSIXError: ("NSPOSIXErrorDomain", Int(posix.code.rawValue), [:])
        default: (error._domain, error._code, [:])
        }
        let localized = error as? any LocalizedError
        if let description = localized?.errorDescription ?? info["NSLocalizedDescription"] as? String {
            return description
        }
        let reason = localized?.failureReason ?? info["NSLocalizedFailureReason"] as? String
            ?? standardReason(domain: domain, code: code) ?? "(\(domain) error \(code).)"
        return "The operation could not be completed. " + reason
    }

    private static func standardReason(domain: String, code: Int) -> String? {
        switch domain {
        case "NSPOSIXErrorDomain": String(validatingCString: strerror(Int32(truncatingIfNeeded: code)))
        case "NSCocoaErrorDomain": cocoaMessages[code]
        default: nil
        }
    }

    /// swift-corelibs-foundation's `CocoaError.errorMessages`.
    private static let cocoaMessages: [Int: String] = [
        4: "The file doesn’t exist.",
        255: "The file couldn’t be locked.",
        257: "You don’t have permission.",
        258: "The file name is invalid.",
        259: "The file isn’t in the correct format.",
        260: "The file doesn’t exist.",
        261: "The specified text encoding isn’t applicable.",
        262: "The specified URL type isn’t supported.",
        263: "The item is too large.",
        264: "The text encoding of the contents couldn’t be determined.",
        513: "You don’t have permission.",
        514: "The file name is invalid.",
        516: "A file with the same name already exists.",
        517: "The specified text encoding isn’t applicable.",
        518: "The specified URL type isn’t supported.",
        640: "There isn’t enough space.",
        642: "The volume is read only.",
        1024: "The value is invalid.",
        2048: "The value is invalid.",
        3072: "The operation was cancelled.",
        3328: "The requested operation is not supported.",
        3840: "The data is not in the correct format.",
        3841: "The data is in a format that this application doesn’t understand.",
        3842: "An error occurred in the source of the data.",
        3851: "An error occurred in the destination for the data.",
        3852: "An error occurred in the content of the data.",
        4353: "The file is not available on iCloud yet.",
        4354: "There isn’t enough space in your account.",
        4355: "The iCloud servers might be unreachable or your settings might be incorrect.",
        4864: "The data isn’t in the correct format.",
        4865: "The data is missing.",
        4866: "The data isn’t in the correct format.",
    ]
}
