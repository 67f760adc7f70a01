import Foundation
import TouchgateService
import TouchgateWire
#if canImport(Glibc)
import Glibc
#endif

/// Why a passphrase could not be read. Never carries any of its bytes.
enum PassphraseInputError: Error, Equatable, CustomStringConvertible {
    /// There is no terminal to ask on and no `--passphrase-fd` was given.
    case noTerminal
    /// The descriptor ended before a passphrase was read.
    case empty
    /// Longer than ``PassphraseInput/maximumLength`` bytes.
    case tooLong
    /// The two entries at a confirmation prompt differ.
    case mismatch
    /// `read` failed.
    case io(Int32)

    var description: String {
        switch self {
        case .noTerminal:
            "no terminal to ask for the passphrase on; pass it on a file descriptor with --passphrase-fd N"
        case .empty: "no passphrase was given (empty input)"
        case .tooLong: "the passphrase is longer than \(PassphraseInput.maximumLength) bytes"
        case .mismatch: "the two passphrases differ; nothing was changed"
        case .io(let code): "cannot read the passphrase: \(String(cString: strerror(code)))"
        }
    }

    /// The service's form: no terminal means the passphrase is required but cannot be asked.
    var serviceError: ServiceError {
        ServiceError(self == .noTerminal ? .passphraseRequired : .passphraseInput, description)
    }
}

/// Reads passphrases from the controlling terminal without echo, or one line at a time
/// from a file descriptor (`--passphrase-fd N`). Never from argv or the environment.
///
/// Bytes go straight into guarded memory (``SecretBytes``); no `String` ever holds them.
/// Each ``passphrase(prompt:)`` answer is kept for the life of the process, so a policy
/// that asks twice (an `and`) does not read the descriptor twice.
/// `@unchecked Sendable`: `cached` is only touched under `lock`.
final class PassphraseInput: @unchecked Sendable {
    /// The longest passphrase accepted, in bytes.
    static let maximumLength = 4096

    /// The descriptor to read from, or nil for the terminal.
    let fileDescriptor: Int32?
    private let lock = NSLock()
    private var cached: SecretBytes?

    /// Input from `fileDescriptor`, or from `/dev/tty` when it is nil.
    init(fileDescriptor: Int32?) {
        self.fileDescriptor = fileDescriptor
    }

    /// The passphrase, asked once per process unless `again` (after a wrong one).
    func passphrase(prompt: String, again: Bool = false) throws -> SecretBytes {
        try lock.withLock {
            if let cached, !again { return cached }
            let value = try read(prompt: prompt)
            cached = value
            return value
        }
    }

    /// A new passphrase: on a terminal asked twice and compared; from a descriptor, the next line.
    func newPassphrase(prompt: String) throws -> SecretBytes {
        try lock.withLock {
            let first = try read(prompt: prompt)
            guard fileDescriptor == nil else { return first }
            let second = try read(prompt: "Repeat it: ")
            guard first.constantTimeEquals(second) else { throw PassphraseInputError.mismatch }
            return first
        }
    }

    /// Reads one passphrase, uncached.
    private func read(prompt: String) throws -> SecretBytes {
        let value: SecretBytes
        if let fileDescriptor {
            value = try Self.readLine(from: fileDescriptor, interactive: false)
        } else {
            value = try Self.readFromTerminal(prompt: prompt)
        }
        guard value.count > 0 else { throw PassphraseInputError.empty }
        return value
    }

    /// Asks on `/dev/tty` with echo off; the terminal settings are restored however it ends.
    private static func readFromTerminal(prompt: String) throws -> SecretBytes {
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
            _ = Glibc.write(fd, "\n", 1)
        }
        _ = prompt.withCString { Glibc.write(fd, $0, strlen($0)) }
        return try readLine(from: fd, interactive: true)
    }

    /// Reads up to a newline (not included; a `\r` before it is dropped too) or the end.
    /// `interactive` polls so that Ctrl-C (task cancellation) ends the wait.
    static func readLine(from fd: Int32, interactive: Bool) throws -> SecretBytes {
        var length = 0
        var ended = false
        let buffer = try SecretBytes.make(count: maximumLength) { raw in
            var byte: UInt8 = 0
            defer { byte = 0 }
            while length < raw.count {
                if interactive {
                    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&poller, 1, 200)
                    if Task.isCancelled { throw CancellationError() }
                    if ready == 0 || (ready < 0 && errno == EINTR) { continue }
                }
                let count = Glibc.read(fd, &byte, 1)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw PassphraseInputError.io(errno)
                }
                if count == 0 || byte == 0x0A {
                    ended = true
                    break
                }
                raw[length] = byte
                length += 1
            }
        }
        guard ended else { throw PassphraseInputError.tooLong }
        return buffer.withUnsafeBytes { bytes in
            var used = length
            if used > 0 && bytes[used - 1] == 0x0D { used -= 1 }
            return SecretBytes.make(count: used) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<used])) }
        }
    }
}
