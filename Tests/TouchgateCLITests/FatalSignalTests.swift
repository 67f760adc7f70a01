import Foundation
import Testing
import TouchgateTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A fatal signal while `secret get` waits for a finger: the process ends at once with
/// one fixed line, releases nothing, prints no register dump or backtrace, and leaves
/// the vault and its audit trail intact.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct FatalSignalTests {
    /// Sends one signal to the running touchgate the first time it asks for a finger.
    final class SignalAtPrompt: @unchecked Sendable {
        // @unchecked Sendable: `sentAt` is read and written only under `lock`.
        private let lock = NSLock()
        private var sentAt: Date?
        let signal: Int32

        init(_ signal: Int32) { self.signal = signal }

        /// When the signal was sent, if it was.
        var sent: Date? { lock.withLock { sentAt } }

        /// Signals `process` once, when `line` is its `finger-needed` event.
        func handle(_ line: String, _ process: RunningProcess) {
            guard line.contains("\"event\":\"finger-needed\"") else { return }
            lock.withLock {
                guard sentAt == nil else { return }
                sentAt = Date()
                // `env` execs touchgate in place, so this is touchgate's pid.
                kill(process.processIdentifier, signal)
            }
        }
    }

    /// The one line the handler prints for `signal`.
    static func line(_ signal: Int32, _ name: String) -> String {
        "touchgate: stopped by fatal signal \(signal) (\(name)); memory wiped, nothing further released"
    }

    @Test func aFatalSignalWhileWaitingForAFingerReleasesNothingAndSaysOneLine() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("api-token", "tok-s3cret-98765", policy: "biometry-any", fresh: true)

        for (signal, name) in [(SIGSEGV, "SIGSEGV"), (SIGBUS, "SIGBUS"), (SIGABRT, "SIGABRT")] {
            let sender = SignalAtPrompt(signal)
            let result = try await vault.rig.process.run(
                ["secret", "get", "api-token", "--json"], timeout: 30, onStderrLine: sender.handle)
            let sentAt = try #require(sender.sent, "\(name): no finger-needed event in \(result.stderrLines)")

            #expect(result.status == 128 + signal, "\(name): \(result.stderrLines)")
            #expect(Date().timeIntervalSince(sentAt) < 10, "\(name): the process ended promptly")
            #expect(result.stdout.isEmpty, "\(name): nothing released on standard output")
            // Besides the JSON progress events, exactly the one fixed line.
            let plain = result.stderrLines.filter { !$0.hasPrefix("{") }
            #expect(plain == [Self.line(signal, name)], "\(name): \(result.stderrLines)")
            let everything = result.stderrLines.joined(separator: "\n")
            for forbidden in ["Registers", "0x", "Thread", "Backtrace", "Fatal error", "tok-s3cret"] {
                #expect(!everything.contains(forbidden), "\(name): stderr shows \(forbidden)")
            }
        }

        // The trail verifies and records no release; the vault still works as before.
        let verified = try await vault.run(["audit", "verify", "--json"])
        #expect(verified.status == 0, "\(verified.stderrLines)")
        let shown = try await vault.run(["audit", "show", "--json"])
        let records = try #require(shown.json?["records"] as? [[String: Any]])
        let releases = records.filter {
            $0["event"] as? String == "item.read" && $0["outcome"] as? String == "success"
        }
        #expect(releases.isEmpty, "no read was recorded as granted")
        let released = try await vault.get("api-token", presenting: ["whorl"])
        #expect(released.status == 0, "\(released.stderrLines)")
        #expect(released.released == "tok-s3cret-98765")
    }
}
