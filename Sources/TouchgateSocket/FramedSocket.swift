import CTouchgateSys
import FoundationEssentials
import Synchronization
public import TouchgateAPI
import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// One message as received: its line, and the secret bytes that followed it, if any.
public struct Frame: Sendable {
    /// The JSON line, without its newline.
    public let line: [UInt8]
    /// The bytes announced by the line's `secret-length`.
    public let secret: SecretBytes?
    /// The open files announced by the line's `descriptors` (``DaemonProtocol``), passed
    /// with `SCM_RIGHTS`; nil when it announced none.
    public let descriptors: PassedDescriptors?

    init(line: [UInt8], secret: SecretBytes?, descriptors: PassedDescriptors? = nil) {
        self.line = line
        self.secret = secret
        self.descriptors = descriptors
    }

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
    var descriptors: Int?
}

/// Open files received from the peer (`SCM_RIGHTS`), closed when the value goes unless
/// ``take()``n first.
public final class PassedDescriptors: Sendable {
    private let owned: Mutex<[Int32]>

    init(_ descriptors: [Int32]) {
        owned = Mutex(descriptors)
    }

    /// How many there are (before ``take()``).
    public var count: Int { owned.withLock { $0.count } }

    /// The descriptors, now the caller's to close; later calls return none.
    public func take() -> [Int32] {
        owned.withLock { owned in
            defer { owned = [] }
            return owned
        }
    }

    deinit {
        for descriptor in owned.withLock({ $0 }) { Glibc.close(descriptor) }
    }
}

/// A connected Unix stream socket speaking ``DaemonProtocol``'s framing, on either side.
///
/// Received messages are read on a thread of their own (a slow or silent peer holds
/// nothing else up) into guarded memory. Sends are serialized.
///
/// A server side calls ``useOutbox(limit:sendTimeout:)``: from then on a send only queues
/// its bytes, and a writer thread of the connection's own delivers them, so a peer that
/// stops reading never holds a thread of the shared pool. A peer that reads nothing for
/// the send timeout, or lets more than the limit pile up, loses its connection.
///
/// `@unchecked Sendable`: `descriptor` never changes; `closed` and the outbox are guarded
/// by `writeLock`, which also serializes sends.
public final class FramedSocket: @unchecked Sendable {
    private let descriptor: Int32
    private let writeLock = ConditionLock()
    private var closed = false
    /// Set once the outbox is in use (server side).
    private var outbox: Outbox?
    private var cutOffReason: String?

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
        // touchgate agent's program connects with its group, which the daemon checks (AgentGroup).
        let connected = AgentGroup.whileConnecting {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
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

    /// The process at the other end, held by a pidfd (``ProcessHandle/peer(of:pid:)``).
    public func peerProcess(pid: Int32) -> ProcessHandle? {
        ProcessHandle.peer(of: descriptor, pid: pid)
    }

    /// Bounds how long a send may block on a peer that does not read.
    public func setSendTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Queued sends (the server side): every send from now on returns at once and a writer
    /// thread of this connection delivers the bytes in order. The connection is closed when
    /// one write makes no progress for `sendTimeout` seconds (the peer stopped reading) or
    /// when more than `limit` bytes wait (it reads far slower than it is written to).
    public func useOutbox(limit: Int, sendTimeout: Int) {
        setSendTimeout(seconds: sendTimeout)
        writeLock.withLock { outbox = Outbox(limit: limit) }
        SystemThread.detach(name: "touchgate-write") { [self] in writeLoop() }
    }

    /// Whether the connection was closed here or broken off (a failed write).
    public var isClosed: Bool { writeLock.withLock { closed } }

    /// Why the outbox cut the peer off, if it did: it stopped reading.
    public var cutOff: String? { writeLock.withLock { cutOffReason } }

    /// Waits until the outbox has room for more (at most half its limit queued), then sends
    /// `message`: for streams of many messages, where a slow reader slows the stream
    /// instead of losing the connection. Returns false when the connection is gone, which
    /// ends the stream. It blocks the calling thread while it waits: call it only on a
    /// thread of its own (``OwnThread``), never on one of the shared pool. The writer makes
    /// room, or cuts the peer off, within its send timeout.
    public func sendBlockingWhenRoom<T: Encodable>(_ message: T) -> Bool {
        writeLock.lock()
        while !closed, let queue = outbox, queue.bytes > queue.limit / 2 { writeLock.wait() }
        writeLock.unlock()
        return send(message)
    }

    /// The peer's messages until it closes the connection; ends with a ``FrameError``
    /// when what it sends cannot be a message (oversized, truncated, a bad secret length,
    /// not JSON, another protocol version).
    public func frames() -> AsyncThrowingStream<Frame, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Frame.self, throwing: (any Error).self)
        SystemThread.detach(name: "touchgate-socket") { [self] in
            do {
                try readLoop { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }

    private func readLoop(_ deliver: (Frame) -> Void) throws {
        // Guarded memory for everything received; kept alive for as long as the loop reads.
        let storage = SecretBuffer(capacity: FrameBuffer.capacity)
        defer { withExtendedLifetime(storage) {} }
        let buffer = FrameBuffer(memory: storage.storage)
        var waiting: (line: [UInt8], length: Int, descriptors: PassedDescriptors?)?
        // Descriptors arrive with the first byte of the line that announces them, so by the
        // time that line is complete they are here, in the order they were sent.
        var arrived: [Int32] = []
        defer { for descriptor in arrived { Glibc.close(descriptor) } }
        while true {
            // Everything already received first.
            while true {
                if let (line, length, descriptors) = waiting {
                    guard let secret = try buffer.takeSecret(length, SecretBytes.init(copying:)) else { break }
                    waiting = nil
                    deliver(Frame(line: line, secret: secret, descriptors: descriptors))
                } else if let line = try buffer.nextLine() {
                    let header = try DaemonProtocol.decode(FrameHeader.self, from: line)
                    if let version = header.version, version != DaemonProtocol.version {
                        throw FrameError.malformed("protocol version \(version) is not spoken here "
                                                   + "(this side speaks \(DaemonProtocol.version))")
                    }
                    var descriptors: PassedDescriptors?
                    if let count = header.descriptors {
                        guard count > 0, count <= DaemonProtocol.maximumDescriptors, count <= arrived.count else {
                            throw FrameError.malformed("the message announces \(count) descriptors and "
                                                       + "\(arrived.count) arrived with it")
                        }
                        descriptors = PassedDescriptors(Array(arrived.prefix(count)))
                        arrived.removeFirst(count)
                    }
                    if let length = header.secretLength {
                        guard length >= 0, length <= DaemonProtocol.maximumSecretBytes else {
                            throw FrameError.secretTooLong
                        }
                        waiting = (line, length, descriptors)
                    } else {
                        deliver(Frame(line: line, secret: nil, descriptors: descriptors))
                    }
                } else {
                    break
                }
            }
            var overflow = false
            let received = buffer.fill { free in
                var incoming = [Int32](repeating: -1, count: Int(CTOUCHGATESYS_MAXIMUM_DESCRIPTORS))
                var count: Int32 = 0
                let result = CTouchgateSys_receive_with_descriptors(descriptor, free.baseAddress, free.count,
                                                                    &incoming, &count)
                arrived += incoming.prefix(Int(count))
                if result == -Int(EMSGSIZE) { overflow = true }
                return result
            }
            if overflow || arrived.count > DaemonProtocol.maximumDescriptors {
                throw FrameError.malformed("more than \(DaemonProtocol.maximumDescriptors) descriptors sent at once")
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
    public func send<T: Encodable>(_ message: T, secret: SecretBytes? = nil) -> Bool {
        sendRaw(DaemonProtocol.encode(message), secret: secret)
    }

    /// Sends `message` with open files attached (`SCM_RIGHTS`); the message's
    /// `descriptors` must say how many. The descriptors stay the caller's (the peer gets
    /// its own copies). Returns false when the peer is gone.
    @discardableResult
    public func send<T: Encodable>(_ message: T, descriptors: [Int32]) -> Bool {
        let line = DaemonProtocol.encode(message)
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return false }
        let first = line.withUnsafeBytes { bytes in
            CTouchgateSys_send_with_descriptors(self.descriptor, bytes.baseAddress, bytes.count, descriptors,
                                                Int32(descriptors.count))
        }
        guard first > 0 else { return false }
        return line.withUnsafeBytes { writeAll(UnsafeRawBufferPointer(rebasing: $0[first...])) }
    }

    /// Sends bytes as they are (an already encoded line, or what no encoder would write,
    /// in tests), then `secret`'s bytes when given.
    @discardableResult
    public func sendRaw(_ bytes: [UInt8], secret: SecretBytes? = nil) -> Bool {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return false }
        if var queue = outbox {
            var (bytes, secret) = (bytes, secret)
            if queue.items.isEmpty, !queue.writing {
                // Nothing in flight: straight out as far as the socket takes it without waiting,
                // so the common short reply costs no hop to the writer thread; the rest is queued.
                guard let rest = sendWithoutWaiting(bytes, secret) else {
                    breakOff()
                    return false
                }
                guard let remaining = rest else { return true }
                (bytes, secret) = remaining
            }
            guard queue.bytes + bytes.count + (secret?.count ?? 0) <= queue.limit else {
                // The peer reads far slower than it is written to: it goes, not the daemon's memory.
                cutOffReason = "more than \(queue.limit / 1024) KiB waited to be written to it"
                breakOff()
                return false
            }
            queue.items.append((bytes, secret))
            queue.bytes += bytes.count + (secret?.count ?? 0)
            outbox = queue
            writeLock.broadcast()
            return true
        }
        guard bytes.withUnsafeBytes({ writeAll($0) }) else { return false }
        if let secret { return secret.withUnsafeBytes { writeAll($0) } }
        return true
    }

    /// The writer thread of ``useOutbox(limit:sendTimeout:)``: writes what is queued, in
    /// order, outside the lock; a write that fails (the send timeout passed, the peer went)
    /// breaks the connection off. Ends once the connection is closed and the queue written.
    private func writeLoop() {
        while true {
            writeLock.lock()
            while outbox?.items.isEmpty ?? true, !closed, !(outbox?.closing ?? false) { writeLock.wait() }
            guard var queue = outbox, !closed, !queue.items.isEmpty else {
                // Closed here, or asked to close once everything queued was written.
                if !closed { breakOff() }
                writeLock.unlock()
                return
            }
            let (bytes, secret) = queue.items.removeFirst()
            queue.writing = true
            outbox = queue
            writeLock.unlock()
            var written = bytes.withUnsafeBytes { writeAll($0) }
            if written, let secret { written = secret.withUnsafeBytes { writeAll($0) } }
            // Read before anything else can change it: a peer that went away is no cut-off.
            let stalled = !written && (errno == EAGAIN || errno == EWOULDBLOCK)
            writeLock.withLock {
                guard !closed else { return }
                outbox?.writing = false
                outbox?.bytes -= bytes.count + (secret?.count ?? 0)
                if !written {
                    if stalled { cutOffReason = "it read nothing within the send timeout" }
                    breakOff()
                }
                writeLock.broadcast()
            }
        }
    }

    /// Writes `bytes` then `secret` as far as the socket takes them at once (`MSG_DONTWAIT`).
    /// Returns nil when the connection failed, `.some(nil)` when everything went, else what
    /// is left to queue. Called with `writeLock` held.
    private func sendWithoutWaiting(_ bytes: [UInt8], _ secret: SecretBytes?) -> ([UInt8], SecretBytes?)?? {
        let line = bytes.withUnsafeBytes { writeSome($0) }
        guard line >= 0 else { return nil }
        if line < bytes.count { return .some((Array(bytes[line...]), secret)) }
        guard let secret else { return .some(nil) }
        let sent = secret.withUnsafeBytes { writeSome($0) }
        guard sent >= 0 else { return nil }
        if sent == secret.count { return .some(nil) }
        let rest = secret.withUnsafeBytes { SecretBytes(copying: $0[sent...]) }
        return .some(([], rest))
    }

    /// How many of `bytes` the socket takes without waiting; -1 when the connection failed.
    private func writeSome(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset,
                                     Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if written < 0 {
                if errno == EINTR { continue }
                return errno == EAGAIN || errno == EWOULDBLOCK ? offset : -1
            }
            offset += written
        }
        return offset
    }

    /// Marks the connection closed and shuts it down both ways (the reader's stream ends);
    /// called with `writeLock` held. Whatever is queued is dropped.
    private func breakOff() {
        closed = true
        outbox?.items.removeAll()
        outbox?.bytes = 0
        shutdown(descriptor, Int32(SHUT_RDWR))
        writeLock.broadcast()
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
    ///
    /// With an outbox, what is queued is still written first (within the send timeout).
    public func close() {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !closed else { return }
        if outbox != nil {
            outbox?.closing = true
            writeLock.broadcast()
            return
        }
        closed = true
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    deinit {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }
}

/// What a server-side connection has queued to send.
private struct Outbox {
    let limit: Int
    var items: [(line: [UInt8], secret: SecretBytes?)] = []
    var bytes = 0
    /// The writer thread is writing an item taken off the queue.
    var writing = false
    /// Close once everything queued is written.
    var closing = false
}
