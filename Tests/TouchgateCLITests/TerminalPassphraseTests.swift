import Foundation
import Testing
import TouchgateTestSupport

/// The passphrase typed on a terminal: asked on /dev/tty with echo off, twice at init.
/// A pseudo-terminal comes from script(1); the typing is fed a moment after start, once
/// touchgate has turned echo off (text typed ahead is kept, but the terminal would echo it).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct TerminalPassphraseTests {
    /// Runs touchgate on a new pseudo-terminal, typing `lines` (from a file, so they are on
    /// no command line) one a second after the first two seconds.
    func onTerminal(_ vault: VaultRig, _ arguments: [String], typing lines: [String]) async throws -> CLIResult {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
                     "this test needs script from bsdutils: apt-get install bsdutils")
        var feed = "sleep 2"
        for (index, line) in lines.enumerated() {
            let file = vault.home.path("typed-\(index)")
            try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: file))
            feed += "; cat '\(file)'; sleep 1"
        }
        var process = vault.rig.process
        process.wrapper = ["/bin/sh", "-c", "(\(feed); sleep 1) | /usr/bin/script -q -e -c \"$*\" /dev/null", "sh"]
        return try await process.run(arguments)
    }

    @Test func initAsksTwiceWithoutEchoAndUnlockReadsTheTerminal() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let typed = "typed-on-a-tty"

        let mismatch = try await onTerminal(vault, ["init", "--kdf", "minimum"], typing: [typed, "something else"])
        #expect(mismatch.status == 8, "\(mismatch.stdout)")
        #expect(mismatch.stdout.contains("differ"))
        #expect(try await vault.run(["status", "--json"]).json?["initialized"] as? Bool == false)

        let created = try await onTerminal(vault, ["init", "--kdf", "minimum"], typing: [typed, typed])
        #expect(created.status == 0, "\(created.stdout)")
        #expect(created.stdout.contains("New vault passphrase:") && created.stdout.contains("Repeat it:"))
        #expect(!created.stdout.contains(typed), "echo is off")

        let unlocked = try await onTerminal(vault, ["unlock"], typing: [typed])
        #expect(unlocked.status == 0, "\(unlocked.stdout)")
        #expect(unlocked.stdout.contains("Passphrase to unlock Touchgate:"))
        #expect(!unlocked.stdout.contains(typed))
        #expect(try await vault.status()["locked"] as? Bool == false)
    }
}
