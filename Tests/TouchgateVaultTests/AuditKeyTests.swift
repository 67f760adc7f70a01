import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit key file: private, created once, required once there are records")
struct AuditKeyTests {
    @Test("the key file is created on first open: 32 bytes, mode 0600, owned by us")
    func created() throws {
        let fixture = try AuditFixture()
        var info = stat()
        #expect(lstat(fixture.log.keyPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(info.st_size == 32)
        #expect(info.st_uid == getuid())
        #expect(fixture.log.keyPath == AuditLog.keyPath(for: fixture.location))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.location.directory.path)
            .filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty)
    }

    @Test("a key read again from the same file is the one already in memory; a file rewritten or loosened is read and checked anew")
    func loadedKeysFollowTheFile() throws {
        let fixture = try AuditFixture()
        let path = fixture.log.keyPath
        let first = try AuditKey.load(path: path)
        #expect(try AuditKey.load(path: path) === first, "the unchanged file was read into new memory")
        let before = first.withUnsafeBytes { Array($0) }

        // Rewritten in place with other bytes (same inode, same size): the new bytes.
        let other = before.map { $0 ^ 0xFF }
        let fd = open(path, O_WRONLY)
        try #require(fd >= 0)
        _ = other.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let rewritten = try AuditKey.load(path: path)
        #expect(rewritten !== first)
        #expect(rewritten.withUnsafeBytes { Array($0) } == other)

        // An older copy put back with its old times (cp -p, then rename over the file): the
        // copy's bytes, not the key in memory.
        let copy = path + ".restore"
        try Data(before).write(to: URL(fileURLWithPath: copy))
        chmod(copy, 0o600)
        var current = stat()
        try #require(stat(path, &current) == 0)
        var times = [current.st_atim, current.st_mtim]
        #expect(utimensat(AT_FDCWD, copy, &times, 0) == 0)
        #expect(rename(copy, path) == 0)
        #expect(try AuditKey.load(path: path).withUnsafeBytes { Array($0) } == before)

        // Loosened: refused, though a key from this file is in memory.
        chmod(path, 0o644)
        #expect(throws: (any Error).self) { _ = try AuditKey.load(path: path) }
        chmod(path, 0o600)
        // Gone: missing, not the remembered key.
        try FileManager.default.removeItem(atPath: path)
        #expect(throws: AuditError.keyMissing(path: path)) { _ = try AuditKey.load(path: path) }
    }

    @Test("a missing key file with records present is a clear error, not a new key")
    func missingKey() throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(2)
        try FileManager.default.removeItem(atPath: fixture.log.keyPath)
        #expect(throws: AuditError.keyMissing(path: fixture.log.keyPath)) {
            _ = try fixture.reopen()
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.log.keyPath))
        let message = AuditError.keyMissing(path: fixture.log.keyPath).description
        #expect(message.contains("restore audit.key"))
    }

    @Test("a key file others can read is refused with the chmod to run", arguments: [0o640, 0o604, 0o644])
    func loosePermissions(mode: Int) throws {
        let fixture = try AuditFixture()
        try fixture.appendSample(1)
        chmod(fixture.log.keyPath, mode_t(mode))
        do {
            _ = try fixture.reopen()
            Issue.record("a key file with mode \(String(mode, radix: 8)) was accepted")
        } catch let StoreError.unsafePermissions(path, detail) {
            #expect(path == fixture.log.keyPath)
            #expect(detail.contains("chmod 600"))
        }
    }

    @Test("a key file that is a symbolic link is refused")
    func symlink() throws {
        let fixture = try AuditFixture()
        let real = fixture.root.appendingPathComponent("elsewhere.key").path
        try FileManager.default.moveItem(atPath: fixture.log.keyPath, toPath: real)
        try FileManager.default.createSymbolicLink(atPath: fixture.log.keyPath, withDestinationPath: real)
        #expect(throws: StoreError.self) { _ = try fixture.reopen() }
    }

    @Test("a key file of the wrong size is refused")
    func wrongSize() throws {
        let fixture = try AuditFixture()
        truncate(fixture.log.keyPath, 16)
        #expect(throws: AuditError.keyInvalid(path: fixture.log.keyPath, detail: "it holds 16 bytes, not 32")) {
            _ = try fixture.reopen()
        }
    }

    @Test("the key is stable across opens: a second instance verifies the first's records")
    func stable() throws {
        let fixture = try AuditFixture()
        let before = try Data(contentsOf: URL(fileURLWithPath: fixture.log.keyPath))
        try fixture.appendSample(3)
        let second = try fixture.reopen()
        #expect(try second.verify() == .intact(count: 3))
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.log.keyPath)) == before)
    }
}
