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

extension ServiceError {
    /// touchgated's `no-vault` as a client shows it: where the person's vault is still the
    /// personal one in their home, the step is moving it in, not `touchgate init` (the
    /// daemon cannot see the home; `status` words it the same way).
    public static func fromDaemon(code: ErrorCode, message: String) -> String {
        guard code == .noVault, let personal = Invocation.personalDatabase() else { return message }
        return "touchgated holds no vault of yours yet; yours is still in your home (\(StoredText.escaped(personal))): "
            + "move it in with touchgate migrate (or use it where it is: set TOUCHGATE_SOCKET= empty)"
    }
}
