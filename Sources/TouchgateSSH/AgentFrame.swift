// The agent protocol's framing: every message, both ways, is a uint32 length and that many
// bytes of body (draft-ietf-sshm-ssh-agent, which OpenSSH's PROTOCOL.agent extends).

/// Finding whole messages in the bytes a connection has received, and framing replies.
public enum AgentFrame {
    /// The longest body this agent reads: OpenSSH's agent and client refuse longer
    /// messages, so nothing legitimate sends one. A peer that announces more is closed
    /// rather than buffered for.
    public static let maximumLength = 256 * 1024

    /// What the bytes received so far hold.
    public enum Scan: Equatable, Sendable {
        /// Not a whole message yet: at least `needed` more bytes must arrive (the rest of the
        /// length prefix, or the rest of the body it announces).
        case incomplete(needed: Int)
        /// A whole message, whose body is at `body` (indices of the bytes scanned); the
        /// message ends at `body.upperBound`, where the next one starts.
        case complete(body: Range<Int>)
    }

    /// Says whether `received` starts with a whole message.
    ///
    /// Throws ``SSHWireError/frameTooLarge(declared:)`` as soon as the length prefix is
    /// over ``maximumLength``, before its body arrives: the connection should be closed.
    public static func scan<Bytes: RandomAccessCollection<UInt8>>(
        _ received: Bytes
    ) throws(SSHWireError) -> Scan where Bytes.Index == Int {
        var cursor = WireCursor(received)
        guard cursor.remaining >= 4 else { return .incomplete(needed: 4 - cursor.remaining) }
        let length = try cursor.uint32()
        guard length <= maximumLength else { throw .frameTooLarge(declared: length) }
        guard cursor.remaining >= Int(length) else { return .incomplete(needed: Int(length) - cursor.remaining) }
        return .complete(body: cursor.position..<cursor.position + Int(length))
    }

    /// `body` with its length prefix: one whole message to send. Bodies are not checked
    /// against ``maximumLength``; a peer refuses what it finds too long.
    public static func frame(_ body: some Collection<UInt8>) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.string(body)
        return writer.bytes
    }
}

/// The message and constraint numbers this module reads and writes, as the draft assigns
/// them.
package enum AgentNumber {
    // Requests, client to agent.
    package static let requestIdentities: UInt8 = 11
    package static let signRequest: UInt8 = 13
    package static let addIdentity: UInt8 = 17
    package static let removeIdentity: UInt8 = 18
    package static let removeAllIdentities: UInt8 = 19
    package static let lock: UInt8 = 22
    package static let unlock: UInt8 = 23
    package static let addIdentityConstrained: UInt8 = 25
    package static let `extension`: UInt8 = 27
    // Answers, agent to client.
    package static let failure: UInt8 = 5
    package static let success: UInt8 = 6
    package static let identitiesAnswer: UInt8 = 12
    package static let signResponse: UInt8 = 14
    package static let extensionFailure: UInt8 = 28
    package static let extensionResponse: UInt8 = 29
    // Key constraints in an add request.
    package static let constrainLifetime: UInt8 = 1
    package static let constrainConfirm: UInt8 = 2
    package static let constrainExtension: UInt8 = 255
}
