import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// One direction of an Assuan connection (the line protocol between gpg-agent and a
/// pinentry): lines of at most 1000 bytes ending in `\n`, data percent-escaped.
///
/// Lines are read into guarded memory: a `D` line from a pinentry holds a passphrase.
/// Not `Sendable`: one owner reads.
final class AssuanReader {
    /// The longest line the protocol allows, newline included.
    static let maximumLine = 1000

    private let fd: Int32
    private let buffer = SecretBuffer(capacity: 4096)
    private var start = 0
    private var end = 0

    init(fd: Int32) { self.fd = fd }

    /// Calls `body` with the next line (without its newline), or returns nil at the end of input.
    /// The bytes are valid only during the call.
    /// - Throws: ``ServiceError`` when a line is too long or reading fails.
    func nextLine<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        while true {
            let bytes = UnsafeRawBufferPointer(buffer.storage)
            if let newline = bytes[start..<end].firstIndex(of: 0x0A) {
                defer { start = newline + 1 }
                return try body(UnsafeRawBufferPointer(rebasing: bytes[start..<newline]))
            }
            guard end - start < Self.maximumLine else {
                throw ServiceError(.usage, "an Assuan line is longer than \(Self.maximumLine) bytes")
            }
            if start > 0 {
                let pending = end - start
                memmove(buffer.storage.baseAddress!, buffer.storage.baseAddress! + start, pending)
                memset(buffer.storage.baseAddress! + pending, 0, end - pending)
                (start, end) = (0, pending)
            }
            let count = read(fd, buffer.storage.baseAddress! + end, buffer.capacity - end)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw ServiceError(.dataError, "cannot read the Assuan stream: \(String(cString: strerror(errno)))") }
            if count == 0 { return nil }
            end += count
        }
    }

    /// The next line as text (for lines that hold no secret), or nil at the end.
    func nextText() throws -> String? {
        try nextLine { String(decoding: $0, as: UTF8.self) }
    }
}

/// Writing Assuan lines.
enum AssuanWriter {
    /// Writes `text` and a newline to `fd`.
    static func line(_ text: String, to fd: Int32) throws {
        try raw(Array((text + "\n").utf8), to: fd)
    }

    /// Writes all of `bytes` to `fd`.
    static func raw(_ bytes: UnsafeRawBufferPointer, to fd: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw ServiceError(.dataError, "cannot write the Assuan stream: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    static func raw(_ bytes: [UInt8], to fd: Int32) throws {
        try bytes.withUnsafeBytes { try raw($0, to: fd) }
    }

    /// Sends `value` as `D` lines, percent-escaping `%`, CR, LF and other control bytes,
    /// each line within the protocol's limit. The escaped form is built in guarded memory.
    static func data(_ value: SecretBytes, to fd: Int32) throws {
        let escaped = value.withUnsafeBytes { bytes in
            SecretBytes.make(count: bytes.reduce(0) { $0 + (needsEscape($1) ? 3 : 1) }) { out in
                var index = 0
                for byte in bytes {
                    if needsEscape(byte) {
                        let hex = Array("0123456789ABCDEF".utf8)
                        out[index] = 0x25
                        out[index + 1] = hex[Int(byte >> 4)]
                        out[index + 2] = hex[Int(byte & 0xF)]
                        index += 3
                    } else {
                        out[index] = byte
                        index += 1
                    }
                }
            }
        }
        try escaped.withUnsafeBytes { bytes in
            var offset = 0
            let chunk = AssuanReader.maximumLine - 4
            repeat {
                var cut = min(offset + chunk, bytes.count)
                // Never split an escape.
                while cut < bytes.count, cut > offset, bytes[cut - 1] == 0x25 || (cut >= 2 && bytes[cut - 2] == 0x25) { cut -= 1 }
                try raw(Array("D ".utf8), to: fd)
                try raw(UnsafeRawBufferPointer(rebasing: bytes[offset..<cut]), to: fd)
                try raw([0x0A], to: fd)
                offset = cut
            } while offset < bytes.count
        }
    }

    private static func needsEscape(_ byte: UInt8) -> Bool { byte == 0x25 || byte < 0x20 || byte == 0x7F }
}

/// Percent-decoding of Assuan arguments (`SETDESC Line one%0ALine two`).
enum AssuanText {
    static func decode(_ text: String) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == 0x25, bytes.count >= 2, let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
