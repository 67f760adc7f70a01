/// What a client of touchgated reports when the conversation itself goes wrong: one
/// wording for touchgate-cli's DaemonClient and the thin `touchgate` front, whose outputs
/// must not differ.
extension ServiceError {
    /// The daemon ended the connection before its result.
    public static let daemonClosedEarly = ServiceError(
        .daemonUnavailable, "touchgated closed the connection before answering; see its log: journalctl -u touchgated")

    /// The daemon sent something that is not the protocol (`detail` says what).
    public static func daemonConversationFailed(_ detail: String) -> ServiceError {
        ServiceError(.daemonUnavailable, "the conversation with touchgated failed: \(detail)")
    }

    /// A release answered without the value.
    public static let daemonReleasedNoValue = ServiceError(.daemonUnavailable, "touchgated released no value")

    /// A failure message without its error.
    public static let daemonFailedUnsaid = ServiceError(.error, "touchgated failed without saying why")

    /// The daemon asked a kind of question this client cannot answer.
    public static func unknownQuestion(_ kind: String) -> ServiceError {
        ServiceError(.error, "touchgated asked a question this client does not know ('\(kind)'); update touchgate")
    }
}
