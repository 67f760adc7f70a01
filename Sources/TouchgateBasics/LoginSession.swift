#if canImport(Glibc)
import Glibc
#endif

/// A process a door holds for as long as it serves it (``ProcessHandle``, by a pidfd), so
/// that what is read of its pid afterwards can be told to be of that process.
public protocol HeldProcess: AnyObject, Sendable {
    /// The process id.
    var pid: Int32 { get }
    /// Whether the process still runs: once it has exited, its pid may be another's.
    var isRunning: Bool { get }
}

extension HeldProcess {
    /// `read()` of the pid, kept only if the process still ran after it was read.
    public func whileRunning<T>(_ read: (Int32) -> T) -> T? {
        let value = read(pid)
        return isRunning ? value : nil
    }
}

/// The login session a process belongs to, as the kernel and systemd-logind record it: the
/// kernel's audit session (`/proc/PID/sessionid`, which logind names its sessions by) and
/// what logind wrote of it (`/run/systemd/sessions/ID`): its seat and whether it is remote.
public struct LoginSession: Sendable, Equatable, CustomStringConvertible {
    public let id: String
    /// Its seat (`seat0`), nil for none (an ssh login, a service).
    public let seat: String?
    /// Whether logind counts it remote.
    public let remote: Bool

    public init(id: String, seat: String?, remote: Bool) {
        self.id = id
        self.seat = seat
        self.remote = remote
    }

    /// The session of `pid`, nil when it is in none (or logind keeps no record of it).
    public static func of(_ pid: Int32, sessions directory: String = "/run/systemd/sessions") -> LoginSession? {
        guard let text = ProcFile.firstLine(of: "/proc/\(pid)/sessionid"), let number = UInt32(text),
              number != UInt32.max, let record = ProcFile.lines(of: "\(directory)/\(number)") else { return nil }
        var fields: [Substring: Substring] = [:]
        for line in record {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[line[..<equals]] = line[line.index(after: equals)...]
        }
        return LoginSession(id: String(number), seat: fields["SEAT"].map(String.init).flatMap { $0.isEmpty ? nil : $0 },
                            remote: fields["REMOTE"] == "1")
    }

    /// `session 3 at seat0`, `session 7 (remote)`.
    public var description: String {
        "session \(id)" + (seat.map { " at \($0)" } ?? "") + (remote ? " (remote)" : "")
    }
}

enum ProcFile {
    /// The lines of a small text file, nil when it cannot be read.
    static func lines(of path: String) -> [Substring]? {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
        guard count >= 0 else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self).split(separator: "\n")
    }

    /// The first line of a small text file.
    static func firstLine(of path: String) -> String? {
        lines(of: path)?.first.map(String.init)
    }
}

