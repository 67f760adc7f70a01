import Foundation
import Testing
@testable import TouchgateCommands
@testable import TouchgateHelpers
import TouchgateAPI

/// `helpers.json`: the mapping rules, and edits made at the same time by several commands.
@Suite struct HelperSettingsTests {
    private static func scratch() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("helpers-\(UUID().uuidString)")
        return directory.appendingPathComponent("touchgate/helpers.json").path
    }

    @Test("sixteen edits at once, each from its own thread: every mapping is kept")
    func concurrentEditsAreAllKept() async throws {
        let path = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    // Each on a thread of its own, blocking in flock as a separate process would.
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        Thread.detachNewThread {
                            _ = try? HelperSettings.update(at: path) { $0.mapSSHKey(pattern: "key-\(index)", to: "item-\(index)") }
                            done.resume()
                        }
                    }
                }
            }
        }
        let settings = try HelperSettings.load(from: path)
        #expect(Set(settings.askpass.map(\.pattern)) == Set((0..<16).map { "key-\($0)" }), "\(settings.askpass)")
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test("mapping rules: a pattern mapped again is replaced, keygrips are kept upper case, unknown ones say so")
    func mappingRules() throws {
        var settings = HelperSettings()
        settings.mapSSHKey(pattern: "id_ed25519", to: "old")
        settings.mapSSHKey(pattern: "id_ed25519", to: "new")
        #expect(settings.askpass == [.init(pattern: "id_ed25519", item: "new")])
        let grip = String(repeating: "ab", count: 20)
        #expect(try settings.mapGPGKey(grip, to: "gpg") == grip.uppercased())
        #expect(settings.pinentryKeys == [grip.uppercased(): "gpg"])
        try settings.unmapGPGKey(grip)
        #expect(settings.pinentryKeys.isEmpty)
        #expect(throws: ServiceError.self) { try settings.mapGPGKey("not-hex", to: "gpg") }
        #expect(throws: ServiceError.self) { try settings.unmapGPGKey(grip) }
        #expect(throws: ServiceError.self) { try settings.unmapSSHKey(pattern: "nothing") }
    }

    @Test("an edit that fails writes nothing")
    func failedEditWritesNothing() throws {
        let path = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        try HelperSettings.update(at: path) { $0.mapSSHKey(pattern: "kept", to: "item") }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: ServiceError.self) {
            try HelperSettings.update(at: path) { settings throws(ServiceError) in
                settings.mapSSHKey(pattern: "lost", to: "item")
                try settings.unmapSSHKey(pattern: "absent")
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}
