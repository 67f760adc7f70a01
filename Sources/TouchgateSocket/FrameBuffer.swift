import TouchgateVault
import TouchgateWire

/// Received bytes, split into message lines and the secret bytes that may follow a line.
///
/// The bytes sit in guarded memory (locked, wiped when freed) and every byte consumed is
/// zeroed at once: a passphrase that arrives in the same read as its message line never
/// lingers anywhere else. Lines themselves are not secret and are copied out.
///
/// Not thread-safe: one connection's reader owns it.
final class FrameBuffer {
    /// Room for the longest line and the longest secret.
    static let capacity = DaemonProtocol.maximumLineBytes + DaemonProtocol.maximumSecretBytes

    private let storage = GuardedBuffer(capacity: FrameBuffer.capacity)
    private var base: UnsafeMutablePointer<UInt8> { storage.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) }
    private var count = 0

    /// Bytes received and not yet consumed.
    var pending: Int { count }

    /// Lets `read` fill free space (it returns how many bytes it wrote, 0 at end of
    /// stream, or a negative value on error, which is returned as is).
    func fill(_ read: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        let free = UnsafeMutableRawBufferPointer(start: base + count, count: Self.capacity - count)
        guard free.count > 0 else { return -1 }
        let received = read(free)
        if received > 0 { count += min(received, free.count) }
        return received
    }

    /// The next complete line without its newline, or nil when none is complete yet.
    /// - Throws: ``FrameError/oversized`` when no newline comes within the limit.
    func nextLine() throws(FrameError) -> [UInt8]? {
        let window = UnsafeBufferPointer(start: base, count: min(count, DaemonProtocol.maximumLineBytes))
        guard let newline = window.firstIndex(of: UInt8(ascii: "\n")) else {
            if count >= DaemonProtocol.maximumLineBytes { throw .oversized }
            return nil
        }
        let line = Array(window[..<newline])
        consume(newline + 1)
        return line
    }

    /// The next `length` bytes as a secret once all have arrived, else nil.
    func takeSecret(_ length: Int) throws(FrameError) -> SecureBytes? {
        guard length >= 0, length <= DaemonProtocol.maximumSecretBytes else { throw .secretTooLong }
        guard count >= length else { return nil }
        let secret = SecureBytes(copying: UnsafeBufferPointer(start: base, count: length))
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
