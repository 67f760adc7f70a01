#if canImport(Glibc)
import Glibc
#endif
import CTouchgateSys

/// A connection to touchgated: lines of JSON and the raw secret bytes that follow some of
/// them (docs/PROTOCOL.md). Every byte read lands in locked memory first.
final class Connection {
    /// Why reading stopped.
    enum Ended: Error {
        /// The daemon closed the connection (or reading failed).
        case closed
        /// A line longer than the protocol allows.
        case oversized
        /// SIGINT or SIGTERM arrived.
        case interrupted
    }

    /// The protocol's longest line, newline included, and its largest secret.
    static let maximumLineBytes = 64 * 1024

    private let fd: Int32
    /// Readable when SIGINT or SIGTERM has arrived (once ``watchInterrupts()`` ran).
    private var interrupts: Int32 = -1
    /// Bytes read and not yet taken: `inbox.base[start..<inbox.count]`.
    private let inbox: LockedBytes
    private var start = 0

    /// A connection to the socket at `path`, or nil when there is none to be had.
    init?(path: String) {
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path),
              let inbox = LockedBytes(capacity: 2 * Self.maximumLineBytes) else { return nil }
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
        var scanned = 0  // bytes after `start` already known to hold no newline
        while true {
            let pending = UnsafeRawBufferPointer(start: inbox.base + start + scanned, count: inbox.count - start - scanned)
            if let newline = pending.firstIndex(of: 0x0A) {
                let end = start + scanned + newline
                let line = Array(UnsafeRawBufferPointer(start: inbox.base + start, count: end - start))
                start = end + 1
                return line
            }
            scanned = inbox.count - start
            guard scanned < Self.maximumLineBytes else { throw .oversized }
            try fill()
        }
    }

    /// The `count` raw bytes that follow a line, appended to `secret`.
    func secret(count: Int, into secret: LockedBytes) throws(Ended) {
        guard count >= 0, count <= Self.maximumLineBytes, secret.capacity - secret.count >= count else { throw .oversized }
        var needed = count
        while needed > 0 {
            if start == inbox.count { try fill() }
            let taken = min(needed, inbox.count - start)
            secret.append(contentsOf: UnsafeRawBufferPointer(start: inbox.base + start, count: taken))
            explicit_bzero(inbox.base + start, taken)
            start += taken
            needed -= taken
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

    /// Reads more into the inbox, first moving what is left to its front.
    private func fill() throws(Ended) {
        if start > 0 {
            let left = inbox.count - start
            memmove(inbox.base, inbox.base + start, left)
            explicit_bzero(inbox.base + left, start)
            inbox.count = left
            start = 0
        }
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
        let got = read(fd, inbox.base + inbox.count, inbox.capacity - inbox.count)
        if got < 0 && errno == EINTR { return }
        guard got > 0 else { throw .closed }
        inbox.count += got
    }
}
