import FoundationEssentials
public import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// Reads passphrases from the controlling terminal without echo, or one line at a time
/// from a file descriptor (`--passphrase-fd N`). Never from argv or the environment.
///
/// Bytes go straight into guarded memory (``SecretBytes``); no `String` ever holds them.
/// Each ``passphrase(prompt:)`` answer is kept for the life of the process, so a policy
/// that asks twice (an `and`) does not read the descriptor twice.
/// `@unchecked Sendable`: `cached` is only touched under `lock`.
public final class PassphraseInput: @unchecked Sendable {
    /// The longest passphrase accepted, in bytes.
    public static let maximumLength = PassphraseReading.maximumLength

    /// The descriptor to read from, or nil for the terminal.
    public let fileDescriptor: Int32?
    private let lock = ConditionLock()
    private var cached: SecretBytes?
    /// The new passphrase last read from the descriptor, which gives it once for both
    /// questions (a terminal keeps none: it is typed again).
    private var lastNew: SecretBytes?

    /// Input from `fileDescriptor`, or from `/dev/tty` when it is nil.
    public init(fileDescriptor: Int32?) {
        self.fileDescriptor = fileDescriptor
    }

    /// The passphrase, asked once per process unless `again` (after a wrong one).
    public func passphrase(prompt: String, again: Bool = false) throws -> SecretBytes {
        try lock.withLock {
            if let cached, !again { return cached }
            let value = try read(prompt: prompt)
            cached = value
            return value
        }
    }

    /// A new passphrase, read once (from a descriptor: the next line).
    public func newPassphrase(prompt: String) throws -> SecretBytes {
        try lock.withLock {
            let value = try read(prompt: prompt)
            if fileDescriptor != nil { lastNew = value }
            return value
        }
    }

    /// The new passphrase again: on a terminal typed anew; from a descriptor, the line just
    /// read, which is then no longer kept.
    public func repeatPassphrase(prompt: String) throws -> SecretBytes {
        try lock.withLock {
            guard fileDescriptor == nil else {
                guard let lastNew else { throw PassphraseInputError.empty }
                self.lastNew = nil
                return lastNew
            }
            return try read(prompt: prompt)
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
        try PassphraseReading.withQuietTerminal(prompt: prompt) { try readLine(from: $0, interactive: true) }
    }

    /// Reads up to a newline (not included; a `\r` before it is dropped too) or the end.
    /// `interactive` polls so that Ctrl-C (task cancellation) ends the wait.
    public static func readLine(from fd: Int32, interactive: Bool) throws -> SecretBytes {
        var length = 0
        let buffer = try SecretBytes.make(count: maximumLength) { raw in
            length = try PassphraseReading.readLine(from: fd, into: raw, interactive: interactive) {
                if Task.isCancelled { throw CancellationError() }
            }
        }
        return buffer.withUnsafeBytes { bytes in
            SecretBytes.make(count: length) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<length])) }
        }
    }
}
