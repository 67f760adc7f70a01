/// Received bytes, split into message lines and the secret bytes that may follow a line.
///
/// The bytes sit in memory its owner provides (guarded or locked, wiped when freed) and
/// every byte consumed is zeroed at once: a passphrase or a released value that arrives in
/// the same read as its message line never lingers anywhere else. Lines themselves are not
/// secret and are copied out; a secret is handed to the caller to copy into memory of its own.
///
/// Both ends of the socket read through it: TouchgateSocket over guarded memory, the thin
/// `touchgate` front over its locked pages. Not thread-safe: one connection's reader owns it.
public final class FrameBuffer {
    /// Room for the longest line and the longest secret.
    public static let capacity = DaemonProtocol.maximumLineBytes + DaemonProtocol.maximumSecretBytes

    private let base: UnsafeMutablePointer<UInt8>
    private var count = 0

    /// A buffer over `memory`, at least ``capacity`` zeroed bytes that must outlive it.
    public init(memory: UnsafeMutableRawBufferPointer) {
        precondition(memory.count >= Self.capacity, "a frame buffer needs \(Self.capacity) bytes")
        base = memory.baseAddress!.assumingMemoryBound(to: UInt8.self)
    }

    /// Bytes received and not yet consumed.
    public var pending: Int { count }

    /// Lets `read` fill free space (it returns how many bytes it wrote, 0 at end of
    /// stream, or a negative value on error, which is returned as is).
    public func fill(_ read: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        let free = UnsafeMutableRawBufferPointer(start: base + count, count: Self.capacity - count)
        guard free.count > 0 else { return -1 }
        let received = read(free)
        if received > 0 { count += min(received, free.count) }
        return received
    }

    /// The next complete line without its newline, or nil when none is complete yet.
    /// - Throws: ``FrameError/oversized`` when no newline comes within the limit.
    public func nextLine() throws(FrameError) -> [UInt8]? {
        let window = UnsafeBufferPointer(start: base, count: min(count, DaemonProtocol.maximumLineBytes))
        guard let newline = window.firstIndex(of: UInt8(ascii: "\n")) else {
            if count >= DaemonProtocol.maximumLineBytes { throw .oversized }
            return nil
        }
        let line = Array(window[..<newline])
        consume(newline + 1)
        return line
    }

    /// Once all `length` bytes of a secret have arrived, `copy`'s copy of them (made
    /// before they are zeroed here); else nil.
    /// - Throws: ``FrameError/secretTooLong`` for a length outside the protocol's limit.
    public func takeSecret<Secret>(_ length: Int, _ copy: (UnsafeRawBufferPointer) -> Secret) throws(FrameError) -> Secret? {
        guard length >= 0, length <= DaemonProtocol.maximumSecretBytes else { throw .secretTooLong }
        guard count >= length else { return nil }
        let secret = copy(UnsafeRawBufferPointer(start: base, count: length))
        consume(length)
        return secret
    }

    /// Drops the first `length` bytes, moving the rest to the front and zeroing the space freed.
    private func consume(_ length: Int) {
        let rest = count - length
        if rest > 0 { base.update(from: base + length, count: rest) }
        (base + rest).update(repeating: 0, count: count - rest)
        count = rest
    }
}
