import Foundation
import Testing
import TouchgateService
import TouchgateVault
import TouchgateAPI

/// Secret names are one name however they are typed (NFC), names that would print like
/// another are refused, and items stored under another spelling by an earlier release
/// stay reachable.
@Suite struct NameNormalisationTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    private func text(_ bytes: SecretBytes) -> String {
        bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The stored names, as their bytes.
    private func storedNames(_ rig: ServiceRig) async throws -> [[UInt8]] {
        try await rig.service.secretList().map { Array($0.name.utf8) }
    }

    @Test func eitherSpellingReachesTheSameItem() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        #expect(!Self.composed.utf8.elementsEqual(Self.decomposed.utf8), "two spellings, different bytes")
        _ = try await rig.service.secretAdd(Self.decomposed, value: rig.value("first"), policy: "passphrase", fresh: false,
                                        interaction: ScriptedInteraction())
        #expect(try await storedNames(rig) == [Array(Self.composed.utf8)], "stored under NFC")
        #expect(text(try await rig.service.secretGet(Self.composed, interaction: ScriptedInteraction())) == "first")
        #expect(text(try await rig.service.secretGet(Self.decomposed, interaction: ScriptedInteraction())) == "first")

        // The other spelling replaces, it does not add a second item that prints the same.
        let replaced = try await rig.service.secretAdd(Self.composed, value: rig.value("second"), policy: "passphrase",
                                                   fresh: false, replace: true, interaction: ScriptedInteraction())
        #expect(replaced.replaced)
        #expect(try await storedNames(rig) == [Array(Self.composed.utf8)])
        #expect(text(try await rig.service.secretGet(Self.decomposed, interaction: ScriptedInteraction())) == "second")
        let records = try await rig.service.auditShow()
        #expect(records.filter { $0.item != nil }.allSatisfy { $0.item!.utf8.elementsEqual(Self.composed.utf8) },
                "the trail names the item one way")

        try await rig.service.secretRm(Self.decomposed, interaction: ScriptedInteraction())
        #expect(try await rig.service.secretList().isEmpty)
    }

    @Test func invisibleAndBlankNamesAreRefusedAndNothingIsStored() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        for name in [" ", "token ", " token", "to\u{200B}ken", "\u{FEFF}token", "token\u{FE0F}", "my\u{A0}token"] {
            do {
                _ = try await rig.service.secretAdd(name, value: rig.value("v"), policy: "passphrase", fresh: false,
                                                interaction: ScriptedInteraction())
                Issue.record("stored \(name.debugDescription)")
            } catch {
                #expect(error.code == .usage && error.exitStatus == 64, "\(name.debugDescription): \(error.message)")
                #expect(!error.message.contains("\u{200B}"), "the message names the character, it does not hold it")
            }
        }
        #expect(try await rig.service.secretList().isEmpty)
    }

    @Test func anItemStoredUnderAnotherSpellingByAnEarlierReleaseStaysReachable() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        // What a release that kept names as typed left behind: items under NFD bytes, one of them
        // also under a name this release refuses (a trailing space).
        try rig.storeAsTyped([Self.decomposed: "legacy", "old name ": "spaced"])
        #expect(try await storedNames(rig).contains(Array(Self.decomposed.utf8)))

        for spelling in [Self.composed, Self.decomposed] {
            #expect(text(try await rig.service.secretGet(spelling, interaction: ScriptedInteraction())) == "legacy")
        }
        #expect(text(try await rig.service.secretGet("old name ", interaction: ScriptedInteraction())) == "spaced")

        // Replacing it moves it to the NFC name in one step: still one item.
        _ = try await rig.service.secretAdd(Self.composed, value: rig.value("renewed"), policy: "passphrase", fresh: false,
                                        replace: true, interaction: ScriptedInteraction())
        let names = try await storedNames(rig)
        #expect(names.contains(Array(Self.composed.utf8)) && !names.contains(Array(Self.decomposed.utf8)), "\(names)")
        #expect(text(try await rig.service.secretGet(Self.decomposed, interaction: ScriptedInteraction())) == "renewed")

        // And an old item can be removed however its name is typed.
        try rig.storeAsTyped([Self.decomposed + "2": "legacy2"])
        try await rig.service.secretRm(Self.composed + "2", interaction: ScriptedInteraction())
        try await rig.service.secretRm("old name ", interaction: ScriptedInteraction())
        #expect(try await rig.service.secretList().map(\.name) == [Self.composed])
        #expect(try await rig.service.auditVerify() > 0)
    }
}

extension ServiceRig {
    /// Stores items straight through the vault, under their names' exact bytes, as a release
    /// before names were normalised did. The vault must be unlocked.
    func storeAsTyped(_ items: [String: String]) throws {
        let database = try TouchgateDatabase(location: service.location)
        let vault = try Vault.open(database: database, owner: service.principal.loginName)
        let key = try #require(try custody(for: vault).currentKey(), "the vault is unlocked")
        for (name, value) in items {
            try vault.setItem(named: name, value: SecretBytes(copying: Array(value.utf8)), policy: "passphrase",
                              freshTouch: false, enrollmentDigest: nil, key: key)
        }
        try database.closeConnections()
    }
}
