import Foundation
import Testing
import TouchgateService
import TouchgateVault
import TouchgateAPI

/// A person who answers every passphrase prompt with `passphrase` and remembers the events.
final class ScriptedInteraction: Interaction, @unchecked Sendable {
    // @unchecked Sendable: `recorded` is only touched under `lock`.
    private let lock = NSLock()
    private var recorded: [InteractionEvent] = []
    let answer: String?
    let confirms: Bool

    init(passphrase: String? = ServiceRig.passphrase, confirms: Bool = true) {
        answer = passphrase
        self.confirms = confirms
    }

    var events: [InteractionEvent] { lock.withLock { recorded } }

    func event(_ event: InteractionEvent) { lock.withLock { recorded.append(event) } }

    var canAskAgain: Bool { false }

    func confirm(_ question: String, details: [String]) throws -> Bool { confirms }

    func passphrase(prompt: String, again: Bool) throws -> SecretBytes {
        guard let answer else { throw ServiceError(.passphraseRequired, "no passphrase in this test") }
        return SecretBytes.make(count: answer.utf8.count) { $0.copyBytes(from: Array(answer.utf8)) }
    }

    func newPassphrase(prompt: String) throws -> SecretBytes { try passphrase(prompt: prompt, again: false) }

    func repeatPassphrase(prompt: String) throws -> SecretBytes { try passphrase(prompt: prompt, again: false) }
}

/// Keeps the unlocked key in this process's memory (what the daemon will do), so the
/// tests need no kernel keyring.
final class MemoryCustody: KeyCustody, @unchecked Sendable {
    // @unchecked Sendable: `key` is only touched under `lock`.
    private let lock = NSLock()
    private var key: VaultKey?
    let vault: Vault

    init(vault: Vault) { self.vault = vault }

    func hold(_ key: VaultKey) throws {
        lock.withLock { self.key = key }
    }

    var latestExpiry: Date? { nil }

    func currentKey() throws -> VaultKey? { lock.withLock { key } }
    var isHolding: Bool { lock.withLock { key != nil } }
    func release() throws -> Bool { lock.withLock { defer { key = nil }; return key != nil } }
}

/// A service over a temporary data directory, for a principal who is not the process owner.
struct ServiceRig {
    static let passphrase = "correct horse battery staple"
    let directory: URL
    let service: TouchgateService
    /// Custodies by vault: one per vault id, kept across requests like a daemon would.
    private let custodies = CustodyShelf()

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-service-\(UUID().uuidString)")
        let location = StoreLocation(directory: directory.appendingPathComponent("touchgate"))
        let shelf = custodies
        service = TouchgateService(principal: Principal(uid: 4242, loginName: "alice"), location: location,
                                   custody: { shelf.custody(for: $0) })
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// The custody this rig keeps `vault`'s key in (the one its service uses).
    func custody(for vault: Vault) -> any KeyCustody { custodies.custody(for: vault) }

    /// The database, as an attacker with sqlite3 would edit it.
    func sql(_ statement: String) throws {
        let database = try TouchgateDatabase(location: service.location)
        try database.writer.writeWithoutTransaction { try $0.execute(sql: statement) }
    }

    func value(_ text: String) -> @Sendable () throws -> SecretBytes {
        { SecretBytes.make(count: text.utf8.count) { $0.copyBytes(from: Array(text.utf8)) } }
    }

    func initAndUnlock() async throws {
        _ = try await service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
        try await service.unlock(interaction: ScriptedInteraction())
    }
}

/// One custody per vault, shared by every request of a rig.
final class CustodyShelf: @unchecked Sendable {
    // @unchecked Sendable: `shelf` is only touched under `lock`.
    private let lock = NSLock()
    private var shelf: [String: MemoryCustody] = [:]

    func custody(for vault: Vault) -> any KeyCustody {
        lock.withLock {
            let id = vault.database.location.directory.path
            if let custody = shelf[id] { return custody }
            let custody = MemoryCustody(vault: vault)
            shelf[id] = custody
            return custody
        }
    }
}

private func text(_ bytes: SecretBytes) -> String {
    bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

/// The use cases through the library alone: no reader, no binary, no keyring.
@Suite struct ServiceTests {
    @Test func passphraseItemsRoundTripForTheGivenPrincipal() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        let stored = try await rig.service.secretAdd("db", value: rig.value("s3cret"), policy: "passphrase", fresh: false,
                                                 interaction: ScriptedInteraction())
        #expect(stored.replaced == false)
        #expect(text(try await rig.service.secretGet("db", interaction: ScriptedInteraction())) == "s3cret")
        let records = try await rig.service.auditShow()
        #expect(records.allSatisfy { $0.vaultUser == nil || $0.vaultUser == "alice" }, "the principal, not the process owner")
        #expect(records.contains { $0.event == "item.read" && $0.outcome == "success" && $0.item == "db" })
        #expect(try await rig.service.auditVerify() == records.count)
    }

    @Test func aWrongPassphraseReleasesNothing() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        _ = try await rig.service.secretAdd("db", value: rig.value("s3cret"), policy: "passphrase", fresh: true,
                                       interaction: ScriptedInteraction())
        await #expect(throws: ServiceError.self) {
            _ = try await rig.service.secretGet("db", interaction: ScriptedInteraction(passphrase: "wrong"))
        }
        do {
            _ = try await rig.service.secretGet("db", interaction: ScriptedInteraction(passphrase: "wrong"))
            Issue.record("released with a wrong passphrase")
        } catch {
            #expect(error.code == .wrongPassphrase)
            #expect(error.exitStatus == 8)
        }
    }

    @Test func badNamesAndPoliciesAreRefusedBeforeAnythingIsStored() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        for (name, policy) in [("evil\u{1B}[2J", "passphrase"), ("", "passphrase"), ("ok", "biometry-sometimes")] {
            do {
                _ = try await rig.service.secretAdd(name, value: rig.value("v"), policy: policy, fresh: false,
                                               interaction: ScriptedInteraction())
                Issue.record("stored \(name.debugDescription) with \(policy)")
            } catch {
                #expect(error.code == .usage)
            }
        }
        #expect(try await rig.service.secretList().isEmpty)
    }

    @Test func verifyWithNothingEnrolledIsRefusedAndAuditedWithoutAReader() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        let interaction = ScriptedInteraction()
        do {
            _ = try await rig.service.verify(interaction: interaction)
            Issue.record("verify matched with nothing enrolled")
        } catch {
            #expect(error.code == .nothingEnrolled)
        }
        #expect(!interaction.events.contains { $0.event == .touchNeeded }, "no reader was asked for")
        let last = try #require(try await rig.service.auditShow().last)
        #expect(last.event == "auth.attempt" && last.outcome == "denied")
    }

    @Test func editedStateIsRefusedAsTamperingUntilRepairedWithThePassphrase() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        _ = try await rig.service.secretAdd("db", value: rig.value("s3cret"), policy: "passphrase", fresh: true,
                                       interaction: ScriptedInteraction())
        try rig.sql("""
            INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('policy.settings', \
            CAST('{"lockoutThreshold":20,"lockoutDurationSeconds":1,"sessionTimeoutSeconds":300,"idleTimeoutSeconds":300}' AS BLOB), 0)
            """)
        for attempt in [0, 1] {
            do {
                _ = try await rig.service.secretGet("db", interaction: ScriptedInteraction())
                Issue.record("released from tampered state (\(attempt))")
            } catch {
                #expect(error.code == .stateTampered)
                #expect(error.exitStatus == 6)
                #expect(error.message.contains("touchgate repair"))
            }
        }
        #expect(try await rig.service.policyShow().lockoutDurationSeconds == 900, "forged settings are not used")
        let status = try await rig.service.status()
        #expect(status.problem?.contains("touchgate repair") == true)
        // A wrong passphrase repairs nothing.
        do {
            _ = try await rig.service.repair(interaction: ScriptedInteraction(passphrase: "wrong"))
            Issue.record("repaired with a wrong passphrase")
        } catch {
            #expect(error.code == .wrongPassphrase)
        }
        let report = try await rig.service.repair(interaction: ScriptedInteraction())
        #expect(report.repaired && report.settingsReset)
        #expect(try await rig.service.repair(interaction: ScriptedInteraction(passphrase: nil)).repaired == false,
                "nothing left to repair, and nothing asked")
        #expect(text(try await rig.service.secretGet("db", interaction: ScriptedInteraction())) == "s3cret")
        let records = try await rig.service.auditShow()
        #expect(records.filter { $0.event == "integrity.failure" }.count == 2, "each refusal is on record")
        #expect(records.contains { $0.event == "state.repair" })
        _ = try await rig.service.auditVerify()
    }

    @Test func lockReleasesTheKeyEvenWithDamagedState() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        try rig.sql("INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('policy.state', x'00', 0)")
        let report = try await rig.service.lock()
        #expect(report.wasUnlocked)
        #expect(report.problem?.contains("touchgate repair") == true)
        #expect(try await rig.service.status().locked == true)
    }

    @Test func concurrentCreatorsOfOneNameConflictInsteadOfOverwriting() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        try await rig.initAndUnlock()
        let service = rig.service
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<8 {
                let value = rig.value("value-\(index)")
                group.addTask {
                    do {
                        _ = try await service.secretAdd("shared", value: value, policy: "passphrase", fresh: true,
                                                    interaction: ScriptedInteraction())
                        return "written"
                    } catch let error as ServiceError {
                        return error.code.rawValue
                    } catch {
                        return "\(error)"
                    }
                }
            }
            var outcomes: [String] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        // Every writer that met the item had to be authorized (the passphrase here), and
        // none could write over an item it did not see: each either created, replaced the
        // version it was authorized for, or got a conflict.
        #expect(outcomes.allSatisfy { $0 == "written" || $0 == "conflict" }, "\(outcomes)")
        let writes = try await rig.service.auditShow().filter { $0.event == "item.write" && $0.outcome == "success" }
        #expect(writes.filter { $0.reason.hasPrefix("created") }.count == 1, "one creation")
        #expect(writes.filter { $0.reason.hasPrefix("created") || $0.reason == "replaced" }.count == outcomes.filter { $0 == "written" }.count)
    }
}
