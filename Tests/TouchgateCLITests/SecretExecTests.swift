import Foundation
import Testing
import TouchgateTestSupport

/// `secret exec`, `secret list`, `secret rm` and the passphrase policy.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct SecretExecTests {
    @Test func execPutsTheValueInTheChildEnvironmentOnly() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("api-token", "tok-12345", policy: "biometry-any")
        let script = "printf 'child:%s' \"$API_TOKEN\"; tr '\\0' ' ' < /proc/$$/cmdline"
        let result = try await vault.run(
            ["secret", "exec", "api-token", "--env", "API_TOKEN", "--json", "--", "/bin/sh", "-c", script],
            presenting: ["whorl"])
        #expect(result.status == 0, "\(result.stderrLines)")
        #expect(result.stdout.hasPrefix("child:tok-12345"), "the child sees the value: \(result.stdout)")
        // The process (touchgate replaced by sh) never had the value on its command line.
        #expect(result.stdout.components(separatedBy: "tok-12345").count == 2, "only the echoed copy")
        #expect(result.fingerPrompts == 1)
        #expect(!result.stderrLines.joined().contains("tok-12345"))
        let trail = try await vault.auditTrail()
        #expect(trail.matching(["event": "item.read", "item": "api-token", "outcome": "success"]).count == 1)

        // The child's exit status is passed through; a missing command is 127.
        let failing = try await vault.run(["secret", "exec", "api-token", "--env", "T", "--", "/bin/sh", "-c", "exit 3"])
        #expect(failing.status == 3)
        let missing = try await vault.run(["secret", "exec", "api-token", "--env", "T", "--", "/nonexistent/tool"])
        #expect(missing.status == 127)
        // The value is never taken from argv: a bad name or no command is a usage error.
        #expect(try await vault.run(["secret", "exec", "api-token", "--env", "1BAD", "--", "true"]).status == 64)
        #expect(try await vault.run(["secret", "exec", "api-token", "--env", "T"]).status == 64)
    }

    @Test func passphrasePolicyListAndRemove() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.add("recovery", "words words words", policy: "passphrase", fresh: true)
        // Fresh: the unlock session is not reused, the passphrase is asked again.
        let noPassphrase = try await vault.runWithoutTerminal(["secret", "get", "recovery", "--json"], stdin: Data())
        #expect(noPassphrase.status == 8, "\(noPassphrase.stderrLines)")
        #expect(noPassphrase.errorCode == "passphrase-required")
        let wrong = try await vault.run(["secret", "get", "recovery", "--passphrase-fd", "0"], stdin: VaultRig.lines("nope"))
        #expect(wrong.status == 8)
        #expect(wrong.stdout.isEmpty)
        let right = try await vault.run(["secret", "get", "recovery", "--passphrase-fd", "0"],
                                        stdin: VaultRig.lines(VaultRig.passphrase))
        #expect(right.status == 0, "\(right.stderrLines)")
        #expect(right.released == "words words words")

        #expect(try await vault.run(["secret", "add", "bad", "--policy", "biometry-some"], stdin: Data("x".utf8)).status == 64)
        #expect(try await vault.run(["secret", "add", "empty", "--policy", "passphrase"], stdin: Data()).status == 64)
        let combined = try await vault.run(["secret", "add", "two", "--policy", "biometry-any&passphrase"], stdin: Data("v".utf8))
        #expect(combined.status == 0)
        let list = try await vault.run(["secret", "list", "--json"])
        let names = (list.json?["items"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == ["recovery", "two"])
        #expect(!list.stdout.contains("words"))

        #expect(try await vault.run(["secret", "rm", "recovery"]).status == 11, "no terminal to confirm on, no --yes")
        #expect(try await vault.run(["secret", "rm", "recovery", "--yes"]).status == 0)
        #expect(try await vault.run(["secret", "rm", "recovery", "--yes"]).status == 10, "not found")
        #expect(try await vault.run(["secret", "get", "recovery"]).status == 10)
        let trail = try await vault.run(["audit", "export"]).stdout
        #expect(try await vault.auditTrail().matching(["event": "item.delete", "item": "recovery", "outcome": "success"]).count == 1)
        #expect(!trail.contains("words words"))
    }
}
