import Foundation
import Testing
import TouchgateAPI
import TouchgatePolicy
import TouchgatePolicyTesting
import TouchgateService

/// The Secret Service's per-application rule, through the service alone: who must touch,
/// for how long an approval lasts, what ends it, and that the list of programs allowed for
/// good cannot be edited into the database.
@Suite struct SecretServiceRuleTests {
    static let secretTool = ApplicationIdentity(executable: "/usr/bin/secret-tool", chain: "pid 10 /usr/bin/secret-tool")
    static let python = ApplicationIdentity(executable: "/usr/bin/python3.11", chain: "pid 11 /usr/bin/python3.11")
    static let details = ItemDetails(collection: "login", label: "GitHub token",
                                     attributes: [SecretAttribute("service", "github"), SecretAttribute("user", "bob")],
                                     contentType: "text/plain")

    func stored(_ rig: RuleRig) async throws -> String {
        let report = try await rig.service.secretServiceStore(Self.details, value: rig.base.value("token"), replace: true,
                                                              application: Self.secretTool,
                                                              interaction: ScriptedInteraction())
        return report.name
    }

    func read(_ rig: RuleRig, _ name: String, as application: ApplicationIdentity) async -> Released {
        do {
            let value = try await rig.service.secretServiceRead(name, application: application, approveOnly: false,
                                                                interaction: ScriptedInteraction())
            return .value(value?.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } ?? "")
        } catch {
            return .failed(error.code)
        }
    }

    func unlocked(_ rig: RuleRig, for application: ApplicationIdentity) async throws -> Bool? {
        try await rig.service.secretServiceSearch([SecretAttribute("service", "github")], collection: nil,
                                                  application: application).items.first?.unlocked
    }

    @Test("each program's first read needs a touch of its own, even inside another's reuse window")
    func perProgram() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        let name = try await stored(rig)
        #expect(name == "GitHub token")
        #expect(try await unlocked(rig, for: Self.secretTool) == false, "storing it does not approve the program")
        #expect(await read(rig, name, as: Self.secretTool) == .value("token"))
        #expect(rig.reader.scans == 1)
        #expect(try await unlocked(rig, for: Self.secretTool) == true)
        #expect(await read(rig, name, as: Self.secretTool) == .value("token"), "inside the window: no touch")
        #expect(rig.reader.scans == 1)
        #expect(try await unlocked(rig, for: Self.python) == false, "another program is not approved by it")
        #expect(await read(rig, name, as: Self.python) == .value("token"))
        #expect(rig.reader.scans == 2, "the second program needed a touch of its own")
    }

    @Test("a stranger's finger approves nothing; the approval ends with the reuse window, the lock and the item")
    func approvalsEnd() async throws {
        let rig = try await RuleRig.ready([.stranger, .finger("right-index")])
        defer { rig.remove() }
        let name = try await stored(rig)
        #expect(await read(rig, name, as: Self.secretTool) == .failed(.noMatch))
        #expect(try await unlocked(rig, for: Self.secretTool) == false)
        #expect(await read(rig, name, as: Self.secretTool) == .value("token"))
        rig.clock.advance(by: .seconds(5 * 60 + 1))
        #expect(try await unlocked(rig, for: Self.secretTool) == false, "past the reuse window")

        rig.reader.then(.finger("right-index"))
        #expect(await read(rig, name, as: Self.secretTool) == .value("token"))
        _ = try await rig.service.lock()
        try await rig.service.unlock(interaction: ScriptedInteraction())
        #expect(try await unlocked(rig, for: Self.secretTool) == false, "locking ends every approval")

        rig.reader.then(.finger("right-index"))
        #expect(await read(rig, name, as: Self.secretTool) == .value("token"))
        try await rig.service.secretRm(name, interaction: ScriptedInteraction())
        _ = try await stored(rig)
        #expect(try await unlocked(rig, for: Self.secretTool) == false, "a new item under the old name starts unapproved")
    }

    @Test("secret allow lets a program read without its own touch; the list cannot be edited into the database")
    func allowList() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        let name = try await stored(rig)
        let report = try await rig.service.secretAllow(name, executable: Self.python.executable, revoke: false,
                                                       interaction: ScriptedInteraction())
        #expect(report.allowed == [Self.python.executable])
        #expect(rig.reader.scans == 1, "allowing needs a touch")
        rig.clock.advance(by: .seconds(10 * 60))
        #expect(try await unlocked(rig, for: Self.python) == true)
        #expect(try await unlocked(rig, for: Self.secretTool) == false)

        // An attacker with the database file adds their program to the list: the item no
        // longer opens for anyone, and nothing is released.
        try rig.base.sql("UPDATE vault_item SET details = replace(details, '/usr/bin/python3.11', '/tmp/evil') WHERE name = 'GitHub token'")
        let edited = try await rig.service.secretServiceSearch([], collection: nil, application: nil).items.first?.details.allowed
        #expect(edited == ["/tmp/evil"], "the edit took")
        let evil = ApplicationIdentity(executable: "/tmp/evil", chain: "pid 12 /tmp/evil")
        let released = await read(rig, name, as: evil)
        #expect(released == .failed(.integrity), "\(released)")
    }

    @Test("an item stored otherwise is not the Secret Service's to release; search shows only its own")
    func onlyItsOwn() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        try await rig.store("plain", "biometry-any")
        let found = try await rig.service.secretServiceSearch([], collection: nil, application: Self.secretTool)
        #expect(found.items.isEmpty && !found.locked)
        #expect(await read(rig, "plain", as: Self.secretTool) == .failed(.forbidden))
        #expect(rig.reader.scans == 0)
    }

    @Test("replaced from the command line with another policy, an item stays in the Secret Service")
    func replacedKeepsDetails() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        let name = try await stored(rig)
        _ = try await rig.service.secretAdd(name, value: rig.base.value("new"), policy: "biometry-any|passphrase", fresh: true,
                                            replace: true, interaction: ScriptedInteraction())
        let found = try await rig.service.secretServiceSearch([SecretAttribute("service", "github")], collection: nil,
                                                              application: nil).items
        #expect(found.map(\.name) == [name] && found.first?.policy == "biometry-any|passphrase", "\(found)")
    }

    @Test("replacing or deleting an item through the Secret Service needs the program approved for it, like a read")
    func replaceNeedsApproval() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        let name = try await stored(rig)
        #expect(await read(rig, name, as: Self.secretTool) == .value("token"))
        #expect(rig.reader.scans == 1)
        // Python, never approved, inside secret-tool's window: its replace asks for a touch,
        // and a stranger's finger leaves the value as it was.
        rig.reader.then(.stranger)
        await #expect(throws: ServiceError.self) {
            _ = try await rig.service.secretServiceStore(Self.details, value: rig.base.value("swapped"), replace: true,
                                                         application: Self.python, interaction: ScriptedInteraction())
        }
        #expect(rig.reader.scans == 2)
        #expect(await read(rig, name, as: Self.secretTool) == .value("token"))
        // secret-tool, approved, replaces without a touch.
        _ = try await rig.service.secretServiceStore(Self.details, value: rig.base.value("renewed"), replace: true,
                                                     application: Self.secretTool, interaction: ScriptedInteraction())
        #expect(rig.reader.scans == 2)
        #expect(await read(rig, name, as: Self.secretTool) == .value("renewed"))
        // Deleting is the same: Python's attempt with a stranger's finger leaves the item.
        rig.reader.then(.stranger)
        await #expect(throws: ServiceError.self) {
            try await rig.service.secretServiceDelete(name, application: Self.python, interaction: ScriptedInteraction())
        }
        #expect(await read(rig, name, as: Self.secretTool) == .value("renewed"))
        try await rig.service.secretServiceDelete(name, application: Self.secretTool, interaction: ScriptedInteraction())
        #expect(try await unlocked(rig, for: Self.secretTool) == nil, "deleted")
    }
}
