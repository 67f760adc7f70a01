import FoundationEssentials
import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// A yes/no question on the controlling terminal, defaulting to no.
public enum TerminalQuestion {
    /// Shows `question` and `details` (a line each) on `/dev/tty` and reads the answer
    /// there; true only for `y` or `yes`. Without a terminal nobody can answer: false.
    public static func ask(_ question: String, details: [String]) throws -> Bool {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // The answer goes on a line of its own after a list, not after its last entry.
        let text = details.isEmpty ? question + " [y/N] " : ([question] + details).joined(separator: "\n") + "\n[y/N] "
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        let answer = try PassphraseInput.readLine(from: fd, interactive: true)
        let word = answer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            .trimmingBlanks().lowercased()
        return word == "y" || word == "yes"
    }
}

extension String {
    /// Without the spaces and tabs at either end.
    func trimmingBlanks() -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }
}
