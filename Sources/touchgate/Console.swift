import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a command speaks: prompts and progress to standard error, the result to
/// standard output. With `--json`, each progress line is a JSON object on standard error
/// and the result is one JSON object on standard output.
struct Console: Sendable {
    /// Whether `--json` was given.
    let json: Bool

    /// A progress or prompt line. `text` is shown to people; `event` and `fields` are the JSON form.
    func event(_ event: String, _ fields: [(String, JSON)] = [], text: String) {
        if json {
            Self.write(JSON.object([("event", .string(event))] + fields).serialized + "\n", to: 2)
        } else {
            Self.write(text + "\n", to: 2)
        }
    }

    /// The command's result: `text` for people, `fields` for `--json`.
    func result(_ fields: [(String, JSON)], text: String?) {
        if json {
            Self.write(JSON.object(fields).serialized + "\n", to: 1)
        } else if let text {
            Self.write(text + "\n", to: 1)
        }
    }

    /// Reports a failure on standard error (and as the JSON result with `--json`).
    func failure(_ failure: Failure) {
        if json {
            let fields: [(String, JSON)] = [("error", .string(failure.code)), ("message", .string(failure.message))]
            Self.write(JSON.object([("event", "error")] + fields).serialized + "\n", to: 2)
            Self.write(JSON.object([("result", "error")] + fields).serialized + "\n", to: 1)
        } else {
            Self.write("touchgate: \(failure.message)\n", to: 2)
        }
    }

    /// Writes all of `text` to a file descriptor (1 or 2), unbuffered, so that lines from
    /// progress and result never interleave out of order.
    static func write(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
