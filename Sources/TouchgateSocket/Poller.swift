import CTouchgateSys
#if canImport(Glibc)
import Glibc
#endif

/// Waits on many sockets from one thread (epoll), as a server with many idle clients
/// should: each descriptor is added with a token the wait reports when it can be read or
/// its peer hung up. ``wake()`` ends a wait from another thread with ``wakeToken``.
public final class Poller: Sendable {
    private let descriptor: Int32
    private let wakeDescriptor: Int32
    /// What ``wait(into:)`` reports after ``wake()``.
    public static let wakeToken = UInt64.max

    public init() throws(SocketError) {
        let poller = CTouchgateSys_poller_create()
        guard poller >= 0 else { throw .system("epoll_create1", -poller) }
        let wake = CTouchgateSys_wake_descriptor()
        guard wake >= 0 else {
            close(poller)
            throw .system("eventfd", -wake)
        }
        descriptor = poller
        wakeDescriptor = wake
        let added = CTouchgateSys_poller_add(poller, wake, Self.wakeToken, 0)
        guard added == 0 else { throw .system("epoll_ctl", -added) }
    }

    /// Reports `socket` as `token` when it can be read or its peer hung up: every time a
    /// wait finds it so, or with `edgeTriggered` only when new bytes arrive (the reader must
    /// then read until it would block before it waits again).
    public func add(_ socket: Int32, token: UInt64, edgeTriggered: Bool) throws(SocketError) {
        let added = CTouchgateSys_poller_add(descriptor, socket, token, edgeTriggered ? 1 : 0)
        guard added == 0 else { throw .system("epoll_ctl", -added) }
    }

    /// Waits until something is ready and puts the tokens of what is into the start of
    /// `tokens` (at most its count, up to 64); returns how many. The array is reused from
    /// wait to wait: nothing is allocated on this path.
    public func wait(into tokens: inout [UInt64]) throws(SocketError) -> Int {
        while true {
            let count = tokens.withUnsafeMutableBufferPointer {
                CTouchgateSys_poller_wait(descriptor, $0.baseAddress, Int32($0.count), -1)
            }
            if count == -EINTR { continue }
            guard count >= 0 else { throw .system("epoll_wait", -count) }
            if tokens[..<Int(count)].contains(Self.wakeToken) {
                // Read back to unreadable, so the next wait waits.
                var value: UInt64 = 0
                _ = read(wakeDescriptor, &value, 8)
            }
            return Int(count)
        }
    }

    /// Ends the current or next wait with ``wakeToken`` (wakes that come before the wait
    /// ends are reported once).
    public func wake() {
        _ = CTouchgateSys_wake(wakeDescriptor)
    }

    deinit {
        close(descriptor)
        close(wakeDescriptor)
    }
}
