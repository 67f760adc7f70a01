import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// touchgated refuses to start from a state directory others can reach or another user
/// owns, saying what to run; a user's store loosened while it runs is refused at the
/// request, not served.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct StateDirectoryTests {
    /// The user whose store the tests make: another user when root, else this one.
    static var user: UInt32? { getuid() == 0 ? DaemonRig.otherUID : nil }
    static var userID: UInt32 { user ?? getuid() }

    /// Runs touchgated as `DaemonRig.start` does, but to its end (it must refuse within 10 s).
    static func startExpectingRefusal(_ rig: DaemonRig) async throws -> (status: Int32, said: String) {
        let command = [rig.binDirectory + "/touchgated", "--socket", rig.socketPath, "--state-dir", rig.stateDirectory,
                       "--fleet-config", rig.home.path("no-fleet.conf")]
        let full = getuid() == 0
            ? ["/usr/bin/setpriv", "--reuid=\(DaemonRig.daemonUID)", "--regid=\(DaemonRig.daemonUID)", "--clear-groups",
               "--"] + command
            : command
        let errors = LineCollector()
        let process = try await BackgroundProcess.start(
            full[0], Array(full.dropFirst()), environment: ["PATH": "/usr/bin:/bin", "FP_DRIVERS_WHITELIST": "virtual_image"],
            error: .lines { errors.append($0) })
        for _ in 0..<100 where process.isRunning {
            try await Task.sleep(for: .milliseconds(100))
        }
        if process.isRunning {
            await process.terminate()
            Issue.record("touchgated started serving from a loosened state directory")
            return (-1, "")
        }
        let status = await process.ended()
        return (status, errors.lines.map { $0 + "\n" }.joined())
    }

    @Test func aLoosenedStateDirectoryStopsTheDaemonAtStartSayingWhatToRun() async throws {
        let rig = try await DaemonRig()
        let state = rig.stateDirectory
        // A store first, made by the daemon as installed.
        try await rig.start()
        try await rig.initialize(as: Self.user)
        rig.stop()
        let store = state + "/users/\(Self.userID)"
        #expect(FileManager.default.fileExists(atPath: store + "/touchgate.sqlite"), "\(rig.daemonLog)")

        let cases: [(String, String, String)] = [
            (state, "0755", "has mode 0755, which lets other users in; run: chmod 0700 '\(state)'"),
            (state + "/users", "0750", "run: chmod 0700 '\(state)/users'"),
            (store, "0711", "run: chmod 0700 '\(store)'"),
            (store + "/touchgate.sqlite", "0640", "run: chmod 0600 '\(store)/touchgate.sqlite'"),
            (store + "/audit.key", "0604", "run: chmod 0600 '\(store)/audit.key'"),
        ]
        for (path, mode, advice) in cases {
            var info = stat()
            try #require(lstat(path, &info) == 0, "\(path) is missing")
            let kept = info.st_mode & 0o7777
            #expect(chmod(path, mode_t(mode, radix: 8)!) == 0)
            let (status, said) = try await Self.startExpectingRefusal(rig)
            #expect(status == 1, "\(path) \(mode): \(status) \(said)")
            #expect(said.contains("refusing to start") && said.contains(advice), "\(path) \(mode): \(said)")
            chmod(path, kept)
        }

        if getuid() == 0 {
            // Owned by someone else: the fix is chown to the daemon's user.
            chown(store + "/touchgate.sqlite", Self.userID, Self.userID)
            let (status, said) = try await Self.startExpectingRefusal(rig)
            #expect(status == 1 && said.contains("belongs to uid \(Self.userID), not to touchgated's uid \(DaemonRig.daemonUID)")
                    && said.contains("run: chown -R"), "\(said)")
            chown(store + "/touchgate.sqlite", DaemonRig.daemonUID, DaemonRig.daemonUID)
        }

        // Put right, it serves again and the store is intact.
        try await rig.start()
        let status = try await rig.run(["status", "--json"], as: Self.user)
        #expect(status.status == 0, "\(status.stderrLines) \(rig.daemonLog)")
    }

    @Test func aStoreLoosenedWhileTheDaemonRunsIsRefusedAtTheRequest() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize(as: Self.user)
        let store = rig.stateDirectory + "/users/\(Self.userID)"
        #expect(try await rig.run(["secret", "list", "--json"], as: Self.user).status == 0)

        for (path, mode) in [(store, mode_t(0o755)), (store + "/touchgate.sqlite", mode_t(0o644))] {
            #expect(chmod(path, mode) == 0)
            let refused = try await rig.run(["secret", "list", "--json"], as: Self.user)
            let message = (refused.json?["message"] as? String) ?? refused.stderrLines.joined()
            #expect(refused.status == 6, "\(path): \(refused.status) \(message)")
            #expect(message.contains("lets other users in") && message.contains("chmod"), "\(path): \(message)")
            chmod(path, path == store ? 0o700 : 0o600)
        }
        #expect(try await rig.run(["secret", "list", "--json"], as: Self.user).status == 0, "served again once put right")
    }
}
