import Foundation
import TouchgateService
import TouchgateWire
#if canImport(Glibc)
import Glibc
#endif

/// A message from a client with the secret bytes that followed it, if any.
public struct ClientFrame: Sendable {
    /// The message.
    public let message: ClientMessage
    /// The secret bytes announced by `secret-length`.
    public let secret: SecretBytes?
}

/// One client connection: who it is, the messages it sends (read on a thread of its own,
/// so a slow or silent client holds nothing else up), and a writer for replies.
///
/// `@unchecked Sendable`: `descriptor` and `peer` never change; writes are serialized by
/// `writeLock`; `closed` is guarded by it too.
public final class Connection: @unchecked Sendable {
    /// Who connected.
    public let peer: Peer
    private let descriptor: Int32
    private let writeLock = NSLock()
    private var closed = false

    /// Takes ownership of an accepted descriptor.
    public init(descriptor: Int32) throws {
        self.descriptor = descriptor
        do {
            peer = try Peer.of(socket: descriptor)
        } catch {
            Glibc.close(descriptor)
            throw error
        }
        // A client that stops reading must not block the daemon forever.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The client's messages until it closes the connection; ends with a ``FrameError``
    /// when what it sends is not a message (the caller answers and closes).
    public func messages() -> AsyncThrowingStream<ClientFrame, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ClientFrame.self, throwing: (any Error).self)
        let thread = Thread { [self] in
            do {
                try readLoop { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = "touchgated-conn"
        thread.start()
        return stream
    }

    private func readLoop(_ deliver: (ClientFrame) -> Void) throws {
        let buffer = FrameBuffer()
        var waitingFor: (message: ClientMessage, length: Int)?
        while true {
            // Everything already received first.
            while true {
                if let (message, length) = waitingFor {
                    guard let secret = try buffer.takeSecret(length) else { break }
                    waitingFor = nil
                    deliver(ClientFrame(message: message, secret: secret))
                } else if let line = try buffer.nextLine() {
                    let message = try DaemonProtocol.decode(ClientMessage.self, from: line)
                    guard message.version == DaemonProtocol.version else {
                        throw FrameError.malformed("protocol version \(message.version) is not spoken here "
                                                   + "(this daemon speaks \(DaemonProtocol.version))")
                    }
                    if let length = message.secretLength {
                        guard length >= 0, length <= DaemonProtocol.maximumSecretBytes else { throw FrameError.secretTooLong }
                        waitingFor = (message, length)
                    } else {
                        deliver(ClientFrame(message: message, secret: nil))
                    }
                } else {
                    break
                }
            }
            let received = buffer.fill { free in
                var count: Int
                repeat { count = read(descriptor, free.baseAddress, free.count) } while count < 0 && errno == EINTR
                return count
            }
            if received == 0 {
                if buffer.pending > 0 || waitingFor != nil { throw FrameError.truncated }
                return
            }
            if received < 0 { return }  // reset by the peer, or closed by us: the client is gone
        }
    }

    /// Sends `message`, followed by `secret`'s bytes when given (`secret-length` must say
    /// how many). Returns false when the client is gone.
    @discardableResult
    public func send<T: Encodable>(_ message: T, secret: SecretBytes? = nil) -> Bool {
        let line = DaemonProtocol.encode(message)
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return false }
        guard line.withUnsafeBytes({ writeAll($0) }) else { return false }
        if let secret { return secret.withUnsafeBytes { writeAll($0) } }
        return true
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Closes the connection; the reader's stream ends.
    public func close() {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return }
        closed = true
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }

    deinit {
        close()
    }
}
