import Foundation
import Testing
import TouchgateTestSupport

/// The passphrase typed on a terminal: asked on /dev/tty with echo off, twice at init.
/// A pseudo-terminal comes from script(1); the typing is fed a moment after start, once
/// touchgate has turned echo off (text typed ahead is kept, but the terminal would echo it).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct TerminalPassphraseTests {
    @Test func initAsksTwiceWithoutEchoAndUnlockReadsTheTerminal() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let typed = "typed-on-a-tty"

        // Three mismatched repeats in a row (a typo is forgiven twice) end the command.
        let mismatch = try await vault.onTerminal(["init", "--kdf", "minimum"],
                                                  typing: [typed, "something else", typed, "other", typed, "third"])
        #expect(mismatch.status == 8, "\(mismatch.stdout)")
        #expect(mismatch.stdout.contains("differ"))
        #expect(try await vault.run(["status", "--json"]).json?["initialized"] as? Bool == false)

        let created = try await vault.onTerminal(["init", "--kdf", "minimum"], typing: [typed, typed])
        #expect(created.status == 0, "\(created.stdout)")
        #expect(created.stdout.contains("New vault passphrase:") && created.stdout.contains("Repeat it:"))
        #expect(!created.stdout.contains(typed), "echo is off")

        let unlocked = try await vault.onTerminal(["unlock"], typing: [typed])
        #expect(unlocked.status == 0, "\(unlocked.stdout)")
        #expect(unlocked.stdout.contains("Passphrase to unlock Touchgate:"))
        #expect(!unlocked.stdout.contains(typed))
        #expect(try await vault.status()["locked"] as? Bool == false)
    }
}
