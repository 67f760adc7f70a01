import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A full disk under the personal store, for real (a small tmpfs mounted as the data
/// directory's file system): writes fail with a message in plain words and exit status 13,
/// never SQLite's text, and nothing stored is lost once space is freed.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct DiskFullTests {
    /// Runs a system tool, required to succeed.
    static func tool(_ path: String, _ arguments: [String]) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: path), "this test needs \(path) (util-linux: mount)")
        let result = try await runProgram(path, arguments)
        try #require(result.status == 0, "\(path) \(arguments) failed: \(result.stderr)")
    }

    /// Writes `file` until the file system has not one byte left.
    static func fill(_ file: String) throws {
        let fd = open(file, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
        try #require(fd >= 0, "cannot create \(file): \(String(cString: strerror(errno)))")
        defer { close(fd) }
        for size in [65_536, 4096, 512, 1] {
            let chunk = [UInt8](repeating: 0x5A, count: size)
            // A short write is followed by one that fails: only ENOSPC ends a size.
            var written = 0
            repeat { written = write(fd, chunk, size) } while written > 0
            try #require(written < 0 && errno == ENOSPC, "filling stopped on \(String(cString: strerror(errno)))")
        }
    }

    /// What a failure said, from `--json` or standard error.
    static func said(_ result: CLIResult) -> String {
        (result.json?["message"] as? String) ?? result.stderrLines.joined(separator: " ")
    }

    @Test func writesOnAFullDiskSaySoPlainlyAndLoseNothing() async throws {
        try #require(getuid() == 0, "this test mounts a small tmpfs to fill for real: run it as root (CI does)")
        let vault = try VaultRig()
        let mountPoint = vault.home.path("data")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try await Self.tool("/bin/mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mountPoint])
        defer {
            runToEndBlocking("/bin/umount", [mountPoint])
            vault.home.remove()
        }
        try await vault.initAndUnlock()
        try await vault.add("keep", "the value that must survive", policy: "passphrase")
        let filler = mountPoint + "/filler"
        try Self.fill(filler)

        // SQLite may still have room in its write-ahead log: each 64 KiB item eats into it
        // until the disk refuses. That refusal is what is checked.
        let value = Data((0..<65_536).map { _ in UInt8.random(in: 0x61...0x7A) })
        var refusal: CLIResult?
        var stored: [String] = []
        for index in 0..<100 {
            let result = try await vault.run(["secret", "add", "bulk-\(index)", "--policy", "passphrase", "--json"],
                                             stdin: value)
            if result.status != 0 {
                refusal = result
                break
            }
            stored.append("bulk-\(index)")
        }
        let refused = try #require(refusal, "100 items of 64 KiB fitted on a full 4 MiB file system")
        let message = Self.said(refused)
        #expect(refused.status == 13, "\(refused.status): \(message)")
        #expect(refused.errorCode == "disk-full", "\(refused.stdout)")
        #expect(message.contains("the disk holding \(vault.rig.dataDirectory) is full; nothing was changed")
                && message.contains("Free some space"), "\(message)")
        #expect(!message.lowercased().contains("sqlite") && !message.contains("database or disk is full"), "\(message)")

        // Removing and changing the policy on the full disk: done, or refused in the same words.
        for arguments in [["secret", "rm", "keep-not-there", "--yes", "--json"],
                          ["policy", "set", "--lockout-threshold", "5", "--json", "--passphrase-fd", "0"]] {
            let result = try await vault.run(arguments, stdin: VaultRig.lines(VaultRig.passphrase))
            let text = Self.said(result) + result.stdout
            #expect(!text.lowercased().contains("sqlite") && !text.contains("database or disk is full"), "\(arguments): \(text)")
            #expect([0, 10, 13].contains(result.status), "\(arguments): \(result.status) \(text)")
        }

        // Space freed: everything stored before is there, the refused item is not, the trail verifies.
        try FileManager.default.removeItem(atPath: filler)
        #expect(try await vault.get("keep").released == "the value that must survive")
        if let last = stored.last {
            #expect(try await vault.get(last).released == String(decoding: value, as: UTF8.self))
        }
        let list = try await vault.run(["secret", "list", "--json"])
        let names = (list.json?["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(Set(names) == Set(["keep"] + stored), "\(names)")
        let verify = try await vault.run(["audit", "verify"])
        #expect(verify.status == 0, "\(verify.stderrLines)")
        try await vault.add("after", "room again", policy: "passphrase")
    }
}
