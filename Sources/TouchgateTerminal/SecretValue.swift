import FoundationEssentials
public import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// `secret get --json`: the released value as a field.
public struct ReleasedValue: Encodable, Sendable {
    public var name: String
    public var value: String
    public var encoding: String
}

/// Reading and writing item values without them passing through a `String` (except
/// `--json`, which must put the value in its JSON text).
public enum SecretValue {
    /// The JSON result of a release: the value as UTF-8 text, or base64 when it is not text.
    public static func report(name: String, value: SecretBytes) -> ReleasedValue {
        value.withUnsafeBytes { bytes in
            if let text = String(validating: bytes, as: UTF8.self) {
                return ReleasedValue(name: name, value: text, encoding: "utf-8")
            }
            return ReleasedValue(name: name, value: Data(bytes).base64EncodedString(), encoding: "base64")
        }
    }

    /// The largest value accepted, in bytes.
    public static let maximumLength = 64 * 1024

    /// Reads the value from standard input: the whole input, without one final newline.
    /// On a terminal it is asked for without echo (one line).
    public static func readStandardInput() throws -> SecretBytes {
        let value: SecretBytes
        if isatty(0) == 1 {
            var saved = termios()
            let isTerminal = tcgetattr(0, &saved) == 0
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            // Echo off before the prompt shows: a value typed as soon as the prompt appears
            // (a password manager's auto-type, a fast typist) must never be echoed.
            if isTerminal { _ = tcsetattr(0, TCSADRAIN, &quiet) }
            Console.write("Secret value (not shown): ", to: 2)
            defer {
                if isTerminal { _ = tcsetattr(0, TCSADRAIN, &saved) }
                Console.write("\n", to: 2)
            }
            value = try PassphraseInput.readLine(from: 0, interactive: true)
        } else {
            value = try readAll(from: 0)
        }
        guard value.count > 0 else { throw ServiceError(.usage, "the secret value is empty; pipe it on standard input") }
        return value
    }

    /// Everything up to the end of `fd`, minus one trailing newline.
    public static func readAll(from fd: Int32) throws -> SecretBytes {
        var length = 0
        let buffer = try SecretBytes.make(count: maximumLength + 1) { raw in
            while length < raw.count {
                let count = read(fd, raw.baseAddress! + length, raw.count - length)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw ServiceError(.dataError, "cannot read standard input: \(String(cString: strerror(errno)))")
                }
                if count == 0 { break }
                length += count
            }
        }
        guard length <= maximumLength else {
            throw ServiceError(.usage, "the secret value is longer than \(maximumLength) bytes")
        }
        return buffer.withUnsafeBytes { bytes in
            let used = length > 0 && bytes[length - 1] == 0x0A ? length - 1 : length
            return SecretBytes.make(count: used) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<used])) }
        }
    }

    /// Writes the value to standard output as is (a newline is added only for a terminal).
    public static func writeStandardOutput(_ value: SecretBytes) throws {
        guard value.withUnsafeBytes({ FileOutput.write($0, to: 1) }) else {
            throw ServiceError(.dataError, "cannot write to standard output")
        }
        if isatty(1) == 1 { Console.write("\n", to: 1) }
    }

    /// Writes the value and a newline to standard output (what askpass programs print).
    public static func writeLine(_ value: SecretBytes) throws {
        try writeStandardOutput(value)
        if isatty(1) != 1 { Console.write("\n", to: 1) }
    }

    /// Calls `body` with the value as a NUL-terminated string in guarded memory.
    /// - Throws: ``ServiceError`` when the value itself holds a NUL byte (it cannot be a C string).
    public static func withCString<R>(_ value: SecretBytes, _ body: (UnsafePointer<CChar>) throws -> R) throws -> R {
        let terminated = try value.withUnsafeBytes { bytes in
            guard !bytes.contains(0) else {
                throw ServiceError(.usage, "the secret holds a NUL byte, so it cannot go into an environment variable")
            }
            return SecretBytes.make(count: bytes.count + 1) { $0.copyMemory(from: bytes) }
        }
        return try terminated.withUnsafeBytes { try body($0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
    }
}
