// The socket protocol's constants and framing errors: TouchgateAPI's messages and both
// ends of the socket use them, and so does the thin `touchgate` front, which has no Foundation.

/// The `touchgated` socket protocol, version 1.
///
/// A connection carries messages in both directions. Each message is one line of JSON in
/// ``WireCoding``'s form (an object, UTF-8, ending in `\n`, at most
/// ``maximumLineBytes`` including the newline). A message that carries secret bytes (a
/// passphrase, a secret's value) says how many in `secret-length`, and exactly that many
/// raw bytes follow its newline: secrets never pass through a JSON string, so neither side
/// holds them in memory it cannot wipe.
///
/// A conversation: the daemon greets (``DaemonMessage/Kind/hello``); the client sends one
/// ``ClientMessage/Kind/request``; the daemon streams ``DaemonMessage/Kind/event``s, may
/// ``DaemonMessage/Kind/ask`` (passphrase, new passphrase, confirmation), which the
/// client ``ClientMessage/Kind/answer``s, and ends with exactly one
/// ``DaemonMessage/Kind/result`` or ``DaemonMessage/Kind/failure``. The client may then
/// send the next request on the same connection. A ``ClientMessage/Kind/cancel``, or the
/// client closing the connection, cancels the request and releases the reader. When the
/// system is about to sleep (logind's `PrepareForSleep`), a request using the reader ends
/// with a failure of code `cancelled` whose message says so; reader requests sent while
/// the system sleeps wait until it has woken.
///
/// A message may also carry open files: its `descriptors` says how many, and they are
/// passed with `SCM_RIGHTS` on the message's first byte (at most
/// ``maximumDescriptors``). Only `migrate` does so today (see ``DaemonOperation/migrate``);
/// files sent with a message that does not announce them are closed unread.
///
/// Anything else (a malformed, oversized or out-of-order message, an unknown version)
/// gets a ``DaemonMessage/Kind/failure`` with code `usage` and the connection is closed.
public enum DaemonProtocol {
    /// The version this build speaks.
    public static let version = 1
    /// The longest message line, newline included.
    public static let maximumLineBytes = 64 * 1024
    /// The most secret bytes one message may carry.
    public static let maximumSecretBytes = 64 * 1024
    /// The most open files one message may carry (see ``ClientMessage/descriptors``).
    public static let maximumDescriptors = 4
}

/// Why bytes from a peer are not a message.
public enum FrameError: Error, Equatable, CustomStringConvertible {
    /// A line longer than ``DaemonProtocol/maximumLineBytes``.
    case oversized
    /// A secret longer than ``DaemonProtocol/maximumSecretBytes``, or negative.
    case secretTooLong
    /// Not a JSON object of the expected shape; the detail names what is wrong.
    case malformed(String)
    /// The peer closed the connection inside a message.
    case truncated

    public var description: String {
        switch self {
        case .oversized: return "message longer than \(DaemonProtocol.maximumLineBytes) bytes"
        case .secretTooLong: return "secret longer than \(DaemonProtocol.maximumSecretBytes) bytes"
        case .malformed(let detail): return "malformed message: \(detail)"
        case .truncated: return "connection closed inside a message"
        }
    }
}
