import Foundation
import Testing
import TouchgateTestSupport

/// Secret names through the built binary (personal mode): one item however `café` is
/// typed, and names that would print like another refused with a message saying what to do.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SecretNameTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    /// The names `secret list --json` shows, as their bytes.
    func listedNames(_ vault: VaultRig) async throws -> [[UInt8]] {
        let list = try await vault.run(["secret", "list", "--json"])
        try #require(list.status == 0, "\(list.stderrLines)")
        return (list.json?["items"] as? [[String: Any]] ?? []).compactMap { ($0["name"] as? String).map { Array($0.utf8) } }
    }

    @Test func aNameTypedComposedOrDecomposedIsOneItem() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.add(Self.decomposed, "espresso", policy: "passphrase")
        #expect(try await listedNames(vault) == [Array(Self.composed.utf8)], "stored under the composed (NFC) form")
        let released = try await vault.get(Self.composed)
        #expect(released.status == 0 && released.released == "espresso", "\(released.stderrLines)")

        let replaced = try await vault.run(["secret", "add", Self.composed, "--policy", "passphrase", "--replace", "--json"],
                                           stdin: Data("ristretto".utf8))
        #expect(replaced.status == 0 && replaced.json?["replaced"] as? Bool == true, "\(replaced.stdout) \(replaced.stderrLines)")
        #expect(try await listedNames(vault).count == 1, "not a second item that prints the same")
        #expect(try await vault.get(Self.decomposed).released == "ristretto")

        let removed = try await vault.run(["secret", "rm", Self.decomposed, "--yes", "--json"])
        #expect(removed.status == 0, "\(removed.stderrLines)")
        #expect(try await listedNames(vault).isEmpty)
    }

    @Test func blankAndInvisibleNamesAreRefusedSayingWhatToUse() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let refused: [(String, String)] = [
            (" ", "only white space"), ("token ", "ends with white space"), (" token", "starts with white space"),
            ("to\u{200B}ken", "invisible character (U+200B ZERO WIDTH SPACE)"),
            ("\u{FEFF}token", "invisible character (U+FEFF"), ("token\u{FE0F}", "VARIATION SELECTOR-16"),
            ("my\u{A0}token", "use a plain space (U+0020)"),
        ]
        for (name, reason) in refused {
            let result = try await vault.run(["secret", "add", name, "--policy", "passphrase", "--json"],
                                             stdin: Data("s3cret-v4lue".utf8))
            #expect(result.status == 64, "\(name.debugDescription): \(result.status) \(result.stderrLines)")
            let said = (result.json?["message"] as? String) ?? result.stderrLines.joined(separator: " ")
            #expect(said.contains(reason), "\(name.debugDescription): \(said)")
            #expect(!said.contains("s3cret-v4lue"), "the value never shows")
        }
        #expect(try await listedNames(vault).isEmpty, "nothing was stored")
    }
}
