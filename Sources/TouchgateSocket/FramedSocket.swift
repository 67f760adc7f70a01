import Foundation
import TouchgateVault
import TouchgateWire
#if canImport(Glibc)
import Glibc
#endif

/// One message as received: its line, and the secret bytes that followed it, if any.
public struct Frame: Sendable {
    /// The JSON line, without its newline.
    public let line: [UInt8]
    /// The bytes announced by the line's `secret-length`.
    public let secret: SecureBytes?

    /// Decodes the line as `T`.
    public func decode<T: Decodable>(_ type: T.Type) throws(FrameError) -> T {
        try DaemonProtocol.decode(type, from: line)
    }
}

/// What every message says about itself before it is understood: its version and
/// whether secret bytes follow it.
private struct FrameHeader: Decodable {
    var version: Int?
    var secretLength: Int?
}

/// A connected Unix stream socket speaking ``DaemonProtocol``'s framing, on either side.
///
/// Received messages are read on a thread of their own (a slow or silent peer holds
/// nothing else up) into guarded memory. Sends are serialized.
///
/// `@unchecked Sendable`: `descriptor` never changes; `closed` is guarded by `writeLock`,
/// which also serializes sends.
public final class FramedSocket: @unchecked Sendable {
    private let descriptor: Int32
    private let writeLock = NSLock()
    private var closed = false

    /// Takes ownership of a connected descriptor.
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Connects to the daemon's socket at `path`.
    public static func connect(path: String) throws -> FramedSocket {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SocketError.system("connect \(path)", ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError.system("socket", errno) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let number = errno
            Glibc.close(descriptor)
            throw SocketError.system("connect \(path)", number)
        }
        return FramedSocket(descriptor: descriptor)
    }

    /// Who is at the other end (``Peer/of(socket:)``).
    public func peer() throws -> Peer {
        try Peer.of(socket: descriptor)
    }

    /// Bounds how long a send may block on a peer that does not read.
    public func setSendTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The peer's messages until it closes the connection; ends with a ``FrameError``
    /// when what it sends cannot be a message (oversized, truncated, a bad secret length,
    /// not JSON, another protocol version).
    public func frames() -> AsyncThrowingStream<Frame, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Frame.self, throwing: (any Error).self)
        let thread = Thread { [self] in
            do {
                try readLoop { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.name = "touchgate-socket"
        thread.start()
        return stream
    }

    private func readLoop(_ deliver: (Frame) -> Void) throws {
        let buffer = FrameBuffer()
        var waiting: (line: [UInt8], length: Int)?
        while true {
            // Everything already received first.
            while true {
                if let (line, length) = waiting {
                    guard let secret = try buffer.takeSecret(length) else { break }
                    waiting = nil
                    deliver(Frame(line: line, secret: secret))
                } else if let line = try buffer.nextLine() {
                    let header = try DaemonProtocol.decode(FrameHeader.self, from: line)
                    if let version = header.version, version != DaemonProtocol.version {
                        throw FrameError.malformed("protocol version \(version) is not spoken here "
                                                   + "(this side speaks \(DaemonProtocol.version))")
                    }
                    if let length = header.secretLength {
                        guard length >= 0, length <= DaemonProtocol.maximumSecretBytes else {
                            throw FrameError.secretTooLong
                        }
                        waiting = (line, length)
                    } else {
                        deliver(Frame(line: line, secret: nil))
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
                if buffer.pending > 0 || waiting != nil { throw FrameError.truncated }
                return
            }
            if received < 0 { return }  // reset by the peer, or closed here: the conversation is over
        }
    }

    /// Sends `message`, followed by `secret`'s bytes when given (the message's
    /// `secret-length` must say how many). Returns false when the peer is gone.
    @discardableResult
    public func send<T: Encodable>(_ message: T, secret: SecureBytes? = nil) -> Bool {
        let line = DaemonProtocol.encode(message)
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return false }
        guard line.withUnsafeBytes({ writeAll($0) }) else { return false }
        if let secret { return secret.withUnsafeBytes { writeAll($0) } }
        return true
    }

    /// Sends bytes as they are (an already encoded line, or what no encoder would write,
    /// in tests), then `secret`'s bytes when given.
    @discardableResult
    public func sendRaw(_ bytes: [UInt8], secret: SecureBytes? = nil) -> Bool {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return false }
        guard bytes.withUnsafeBytes({ writeAll($0) }) else { return false }
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

    /// Ends the connection: the reader's stream ends and the peer sees end of stream.
    /// The descriptor itself is closed when the last reference goes (the reader thread
    /// holds one), so no read can ever land on a reused descriptor number.
    public func close() {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return }
        closed = true
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    deinit {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }
}
