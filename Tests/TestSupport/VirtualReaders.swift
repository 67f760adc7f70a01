import Foundation
public import TouchgateImageIO
#if canImport(Glibc)
import Glibc
#endif

/// Errors talking to a virtual reader's socket.
public struct VirtualReaderError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
}

/// Connects a Unix stream socket, retrying while the driver has not started listening yet.
func connectUnix(_ path: String, timeout: Duration = .seconds(5)) throws -> Int32 {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while true {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw VirtualReaderError(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes + [0])
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result == 0 { return fd }
        let failure = errno
        close(fd)
        if clock.now > deadline {
            throw VirtualReaderError(description: "cannot connect to \(path): \(String(cString: strerror(failure)))")
        }
        usleep(10_000)
    }
}

/// Writes all of `bytes` to the socket `fd`. A peer that closed is an error (EPIPE), not
/// SIGPIPE: the driver closes its end when the reader is closed, and the caller connects anew.
func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if written < 0 {
            if errno == EINTR { continue }
            throw VirtualReaderError(description: "write: \(String(cString: strerror(errno)))")
        }
        offset += written
    }
}

/// The test side of libfprint's `virtual_image` driver (`FP_VIRTUAL_IMAGE=socket`).
///
/// One persistent connection; each message is two native-endian int32 then, for an
/// image, `width * height` grey bytes. Send an image only once the reader waits for a finger.
public final class VirtualImageClient: @unchecked Sendable {
    // @unchecked Sendable: `fd` is set once in init; writes are serialized by `lock`.
    private let fd: Int32
    private let lock = NSLock()

    /// Connects to the driver's socket (the reader must be open).
    public init(socketPath: String) throws {
        fd = try connectUnix(socketPath)
    }

    deinit { close(fd) }

    /// The connection's descriptor, to see whether the driver closed it.
    var descriptor: Int32 { fd }

    /// Whether the driver has closed its end (the reader was closed since): nothing sent
    /// on this connection would reach a reader any more.
    public var isClosedByDriver: Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) == 1 else { return false }
        if poller.revents & Int16(POLLHUP | POLLERR) != 0 { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }

    private func send(_ first: Int32, _ second: Int32, payload: [UInt8] = []) throws {
        var bytes = [UInt8]()
        withUnsafeBytes(of: first) { bytes += $0 }
        withUnsafeBytes(of: second) { bytes += $0 }
        lock.lock()
        defer { lock.unlock() }
        try writeAll(fd, bytes + payload)
    }

    /// Sends a finger image.
    public func send(image: GreyImage) throws {
        try send(Int32(image.width), Int32(image.height), payload: image.pixels)
    }

    /// Makes the current operation report a retry with this code.
    public func sendRetry(_ code: Int32) throws { try send(-1, code) }
    /// Makes the current operation fail with this device error code.
    public func sendError(_ code: Int32) throws { try send(-2, code) }
    /// Turns automatic finger on/off reporting on or off.
    public func setAutomaticFinger(_ on: Bool) throws { try send(-3, on ? 1 : 0) }
    /// Reports the finger as off or on the reader.
    public func setFinger(_ present: Bool) throws { try send(-4, present ? 1 : 0) }
    /// Removes (unplugs) the device.
    public func unplug() throws { try send(-5, 0) }
}

/// The test side of libfprint's `virtual_device` driver (`FP_VIRTUAL_DEVICE=socket`, or
/// `FP_VIRTUAL_DEVICE_STORAGE` for the variant with storage): one ASCII command per
/// connection, no newline.
public struct VirtualDeviceClient: Sendable {
    /// The driver's socket.
    public let socketPath: String

    /// A client for the socket at `socketPath`.
    public init(socketPath: String) { self.socketPath = socketPath }

    /// Sends one command (such as `SCAN whorl` or `UNPLUG`) and returns what the driver
    /// answered, if anything (only `LIST` answers).
    @discardableResult
    public func send(_ command: String, expectReply: Bool = false) throws -> String {
        let fd = try connectUnix(socketPath)
        defer { close(fd) }
        try writeAll(fd, Array(command.utf8))
        guard expectReply else { return "" }
        // Bounded: callers wait here on a thread of the shared pool (a prompt's handler), and a
        // driver that never closes would hold that thread, and every test waiting for one.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var reply = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            reply += buffer[0..<count]
        }
        return String(decoding: reply, as: UTF8.self)
    }
}
