import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate import fprintd --from DIR` on stores made to hurt: a FIFO where a print
/// should be (must not hang), links pointing out of the store, a huge file, user names
/// that climb out of it, and folder names that would drive a terminal. Each is refused
/// with a message that names the file and says what to do, and nothing is imported.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ImportHostileStoreTests {
    /// A store `<home>/store/<user>/virtual_image/0/` and a touchgate that imports from it.
    struct Rig {
        let home: TemporaryDirectory
        let process: CLIProcess
        let user = "ana"

        init() throws {
            home = try TemporaryDirectory("touchgate-import-hostile")
            process = CLIProcess(environment: ["HOME": home.url.path, "XDG_DATA_HOME": home.path("data")])
            try FileManager.default.createDirectory(atPath: device, withIntermediateDirectories: true)
        }

        var store: String { home.path("store") }
        var device: String { "\(store)/\(user)/virtual_image/0" }

        func run(user: String? = nil) async throws -> CLIResult {
            try await process.run(["import", "fprintd", "--from", store, "--user", user ?? self.user, "--json"], timeout: 20)
        }

        func message(_ result: CLIResult) -> String {
            (result.json?["message"] as? String) ?? result.stderrLines.joined(separator: " ")
        }

        func imported() async throws -> String {
            let database = home.path("data/touchgate/touchgate.sqlite")
            guard FileManager.default.fileExists(atPath: database) else { return "0" }
            return try await StorageReaderRig.sqlite(database, "SELECT count(*) FROM print")
        }
    }

    @Test func aFIFOWhereAPrintShouldBeIsRefusedAtOnce() async throws {
        let rig = try Rig()
        defer { rig.home.remove() }
        try #require(mkfifo("\(rig.device)/7", 0o600) == 0)
        let started = Date()
        let result = try await rig.run()
        #expect(Date().timeIntervalSince(started) < 15, "did not wait for a writer")
        #expect(result.status == 6, "\(result.stderrLines)")
        #expect(rig.message(result).contains("is not a plain file"), "\(rig.message(result))")
        await #expect(try rig.imported() == "0")
    }

    @Test func aLinkOutOfTheStoreIsNotFollowed() async throws {
        let rig = try Rig()
        defer { rig.home.remove() }
        let outside = rig.home.path("outside")
        try Data("not a print".utf8).write(to: URL(fileURLWithPath: outside))
        try FileManager.default.createSymbolicLink(atPath: "\(rig.device)/7", withDestinationPath: outside)
        let file = try await rig.run()
        #expect(file.status == 6, "\(file.stderrLines)")
        #expect(rig.message(file).contains("symbolic link"), "\(rig.message(file))")

        // A linked folder too.
        try FileManager.default.removeItem(atPath: "\(rig.device)/7")
        let elsewhere = rig.home.path("elsewhere/0")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(rig.store)/\(rig.user)/other_driver",
                                                   withDestinationPath: rig.home.path("elsewhere"))
        let folder = try await rig.run()
        #expect(folder.status == 6, "\(folder.stderrLines)")
        #expect(rig.message(folder).contains("symbolic link"), "\(rig.message(folder))")
        await #expect(try rig.imported() == "0")
    }

    @Test func aHugeFileIsNotReadIntoMemory() async throws {
        let rig = try Rig()
        defer { rig.home.remove() }
        let path = "\(rig.device)/7"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        try #require(truncate(path, 64 << 30) == 0, "a sparse 64 GiB file")
        let result = try await rig.run()
        #expect(result.status == 6, "\(result.stderrLines)")
        #expect(rig.message(result).contains("far larger than any print"), "\(rig.message(result))")
    }

    @Test func userNamesThatClimbOutOfTheStoreAreRefused() async throws {
        let rig = try Rig()
        defer { rig.home.remove() }
        for name in ["..", ".", "../ana", "ana/virtual_image"] {
            let result = try await rig.run(user: name)
            #expect(result.status == 64, "\(name): \(result.stderrLines)")
            #expect(rig.message(result).contains("not a user name"), "\(name): \(rig.message(result))")
        }
    }

    @Test func folderNamesThatWouldDriveATerminalAreEscaped() async throws {
        let rig = try Rig()
        defer { rig.home.remove() }
        let evil = "\(rig.store)/\(rig.user)/evil\u{1B}]0;owned\u{07}\u{1B}[2J/0"
        try FileManager.default.createDirectory(atPath: evil, withIntermediateDirectories: true)
        try Data("not a print".utf8).write(to: URL(fileURLWithPath: "\(evil)/7"))
        for json in [true, false] {
            let result = try await rig.process.run(["import", "fprintd", "--from", rig.store, "--user", rig.user]
                                                   + (json ? ["--json"] : []), timeout: 20)
            #expect(result.status == 6, "\(result.stderrLines)")
            let everything = result.stdout + result.stderrLines.joined(separator: "\n")
            #expect(!everything.contains("\u{1B}"), "\(everything.debugDescription)")
            #expect(everything.contains("evil"), "names the file: \(everything)")
        }
    }
}
