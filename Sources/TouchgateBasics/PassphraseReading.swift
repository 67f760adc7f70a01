#if canImport(Glibc)
import Glibc
#endif

/// Why a passphrase could not be read. Never carries any of its bytes.
public enum PassphraseInputError: Error, Equatable, CustomStringConvertible {
    /// There is no terminal to ask on and no `--passphrase-fd` was given.
    case noTerminal
    /// The descriptor ended before a passphrase was read.
    case empty
    /// Longer than ``PassphraseReading/maximumLength`` bytes.
    case tooLong
    /// The two entries at a confirmation prompt differ.
    case mismatch
    /// `read` failed.
    case io(Int32)

    public var description: String {
        switch self {
        case .noTerminal:
            "no terminal to ask for the passphrase on; pass it on a file descriptor with --passphrase-fd N"
        case .empty: "no passphrase was given (empty input)"
        case .tooLong: "the passphrase is longer than \(PassphraseReading.maximumLength) bytes"
        case .mismatch: "the two passphrases differ; nothing was changed"
        case .io(let code): "cannot read the passphrase: \(String(cString: strerror(code)))"
        }
    }

    /// The service's form: no terminal means the passphrase is required but cannot be asked.
    public var serviceError: ServiceError {
        ServiceError(self == .noTerminal ? .passphraseRequired : .passphraseInput, description)
    }
}

/// Reading a passphrase's bytes, from the controlling terminal without echo or one line
/// from a descriptor, straight into memory the caller owns (guarded or locked): no
/// `String` or array ever holds them. Both `touchgate` binaries ask through this.
public enum PassphraseReading {
    /// The longest passphrase accepted, in bytes.
    public static let maximumLength = 4096

    /// Opens `/dev/tty`, turns echo off, writes `prompt` and calls `body` with the
    /// terminal's descriptor; the settings are restored (and a newline written) however
    /// it ends.
    public static func withQuietTerminal<R>(prompt: String, _ body: (Int32) throws -> R) throws -> R {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw PassphraseInputError.noTerminal }
        defer { close(fd) }
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else { throw PassphraseInputError.noTerminal }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        guard tcsetattr(fd, TCSADRAIN, &quiet) == 0 else { throw PassphraseInputError.noTerminal }
        defer {
            _ = tcsetattr(fd, TCSADRAIN, &saved)
            _ = write(fd, "\n", 1)
        }
        _ = prompt.withCString { write(fd, $0, strlen($0)) }
        return try body(fd)
    }

    /// Reads from `fd` up to a newline (not kept; a `\r` before it is dropped too) or the
    /// end, into `buffer`, and returns how many bytes it holds. `interactive` polls every
    /// 200 ms and calls `checkCancelled` (which throws to stop) so that Ctrl-C ends the wait.
    /// - Throws: ``PassphraseInputError/tooLong`` when `buffer` fills before the line
    ///   ends, ``PassphraseInputError/io(_:)``, or what `checkCancelled` throws.
    public static func readLine(from fd: Int32, into buffer: UnsafeMutableRawBufferPointer, interactive: Bool,
                                checkCancelled: () throws -> Void = {}) throws -> Int {
        var length = 0
        var byte: UInt8 = 0
        defer { byte = 0 }
        while length < buffer.count {
            if interactive {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 200)
                try checkCancelled()
                if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            }
            let count = read(fd, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                throw PassphraseInputError.io(errno)
            }
            if count == 0 || byte == 0x0A {
                return length > 0 && buffer[length - 1] == 0x0D ? length - 1 : length
            }
            buffer[length] = byte
            length += 1
        }
        throw PassphraseInputError.tooLong
    }
}
