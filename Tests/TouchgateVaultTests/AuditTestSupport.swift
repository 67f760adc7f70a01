import Foundation
import Synchronization
@testable import TouchgateVault
#if canImport(Glibc)
import Glibc
#endif

/// A wall clock tests can set.
final class AuditTestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    var now: Date {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    var function: @Sendable () -> Date {
        { [self] in now }
    }
}

/// A private temporary data directory with a database and an audit log in it.
final class AuditFixture {
    let root: URL
    let location: StoreLocation
    let database: TouchgateDatabase
    let log: AuditLog
    let clock: AuditTestClock

    init(journal: AuditJournal = .disabled, clock: AuditTestClock = AuditTestClock()) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-audit-\(UUID().uuidString)")
        location = StoreLocation(directory: root.appendingPathComponent("data"))
        database = try TouchgateDatabase(location: location)
        self.clock = clock
        log = try AuditLog(database: database, journal: journal, now: clock.function)
    }

    deinit {
        try? FileManager.default.removeItem(at: root)
    }

    /// Appends `count` varied records.
    func appendSample(_ count: Int) throws {
        let events: [AuditEvent] = [.authAttempt, .itemRead, .itemWrite, .vaultUnlock, .lockoutStart]
        let outcomes: [AuditOutcome] = [.success, .failure, .denied, .error]
        for index in 0..<count {
            try log.append(events[index % events.count], outcomes[index % outcomes.count],
                           vaultUser: index % 3 == 0 ? nil : "alice",
                           item: index % 2 == 0 ? "item-\(index)" : nil,
                           reason: "sample \(index)")
        }
    }

    /// Runs SQL on the database file through a separate plain connection, as an
    /// attacker or a DBA with the file (but not the key) would.
    func tamper(_ sql: String, arguments: StatementArguments = StatementArguments()) throws {
        let queue = try DatabaseQueue(path: location.databasePath)
        try queue.write { db in try db.execute(sql: sql, arguments: arguments) }
        try queue.close()
    }

    /// Opens a second, independent log on the same data directory.
    func reopen(journal: AuditJournal = .disabled) throws -> AuditLog {
        try AuditLog(database: try TouchgateDatabase(location: location), journal: journal, now: clock.function)
    }
}

/// A datagram socket bound in a temporary directory, standing in for journald.
final class TestDatagramSocket {
    let path: String
    private let fd: Int32

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("journal.sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let status = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(fd)
    }

    /// The next datagram, or nil after five seconds without one.
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count < 0 ? nil : Array(buffer[0..<count])
    }

    /// The next datagram parsed as journald native fields (both encodings).
    func receiveFields() -> [String: String]? {
        guard let bytes = receive() else { return nil }
        var fields: [String: String] = [:]
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "=") }) else { return nil }
            let key = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                let lineEnd = bytes[end...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                fields[key] = String(decoding: bytes[(end + 1)..<lineEnd], as: UTF8.self)
                index = lineEnd + 1
            } else {
                var length: UInt64 = 0
                for shift in 0..<8 { length |= UInt64(bytes[end + 1 + shift]) << (8 * UInt64(shift)) }
                let start = end + 9
                fields[key] = String(decoding: bytes[start..<(start + Int(length))], as: UTF8.self)
                index = start + Int(length) + 1
            }
        }
        return fields
    }
}
