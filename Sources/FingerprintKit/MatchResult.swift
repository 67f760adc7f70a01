/// The outcome of ``Reader/verify(_:events:)``.
public struct VerifyResult: Sendable, Equatable {
    /// Whether the finger matched the enrolled print.
    public let matched: Bool
    /// The print the reader made of the scan, when its driver reports one (libfprint's
    /// `print` out-parameter; image readers report it, match-on-chip readers may not).
    public let scanned: Print?

    /// A result; public so that tests and doubles can make one.
    public init(matched: Bool, scanned: Print? = nil) {
        self.matched = matched
        self.scanned = scanned
    }
}

/// The outcome of ``Reader/identify(_:events:)``.
public struct IdentifyResult: Sendable, Equatable {
    /// The position in the gallery of the print that matched; nil for no match.
    public let index: Int?
    /// The gallery print that matched, as the reader reported it.
    public let matched: Print?
    /// The print the reader made of the scan, when its driver reports one. On a reader
    /// with storage it can name a print the reader holds that the gallery lacks.
    public let scanned: Print?

    /// A result; public so that tests and doubles can make one.
    public init(index: Int?, matched: Print? = nil, scanned: Print? = nil) {
        self.index = index
        self.matched = matched
        self.scanned = scanned
    }
}
