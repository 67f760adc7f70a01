#if canImport(Glibc)
import Glibc
#endif
import CTouchgateSys
import TouchgateAPI

/// A connection to touchgated: lines of JSON and the raw secret bytes that follow some of
/// them (docs/PROTOCOL.md), read through the socket's own ``FrameBuffer`` over locked
/// memory, so every byte received lands there first and is zeroed once taken.
final class Connection {
    /// Why reading stopped.
    enum Ended: Error {
        /// The daemon closed the connection (or reading failed).
        case closed
        /// Not the protocol's framing: a line or a secret over its limit.
        case framing(FrameError)
        /// SIGINT or SIGTERM arrived.
        case interrupted
    }

    private let fd: Int32
    /// Readable when SIGINT or SIGTERM has arrived (once ``watchInterrupts()`` ran).
    private var interrupts: Int32 = -1
    /// The memory the frames are read into, and the frames.
    private let inbox: SecretBuffer
    private let frames: FrameBuffer

    /// A connection to the socket at `path`, or nil when there is none to be had.
    init?(path: String) {
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
        let inbox = SecretBuffer(capacity: FrameBuffer.capacity)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.inbox = inbox
        frames = FrameBuffer(memory: inbox.storage)
    }

    deinit {
        close(fd)
        if interrupts >= 0 { close(interrupts) }
    }

    /// From now on, SIGINT and SIGTERM end a wait with ``Ended/interrupted`` instead of
    /// ending the process; false when that cannot be arranged.
    func watchInterrupts() -> Bool {
        interrupts = CTouchgateSys_interrupt_descriptor()
        return interrupts >= 0
    }

    /// Whether SIGINT or SIGTERM has arrived.
    var interrupted: Bool {
        guard interrupts >= 0 else { return false }
        var poller = pollfd(fd: interrupts, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0
    }

    /// The next line, without its newline.
    func line() throws(Ended) -> [UInt8] {
        while true {
            do {
                if let line = try frames.nextLine() { return line }
            } catch {
                throw .framing(error)
            }
            try receive()
        }
    }

    /// The `count` raw bytes that follow a line, appended to `secret`.
    func secret(count: Int, into secret: SecretBuffer) throws(Ended) {
        guard secret.capacity - secret.count >= count else { throw .framing(.secretTooLong) }
        while true {
            do {
                if try frames.takeSecret(count, { secret.append(contentsOf: $0) }) != nil { return }
            } catch {
                throw .framing(error)
            }
            try receive()
        }
    }

    /// Sends `bytes`; false when the daemon is gone.
    func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Sends `bytes`; false when the daemon is gone.
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send($0) }
    }

    /// Waits for the socket (or an interrupt) and reads what came into the frame buffer.
    private func receive() throws(Ended) {
        var pollers = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: interrupts, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&pollers, nfds_t(interrupts >= 0 ? 2 : 1), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .closed
            }
            if interrupts >= 0, pollers[1].revents != 0 { throw .interrupted }
            break
        }
        let got = frames.fill { free in
            while true {
                let got = read(fd, free.baseAddress, free.count)
                if got < 0 && errno == EINTR { continue }
                return got
            }
        }
        guard got > 0 else { throw .closed }
    }
}
