import Foundation
import Testing
import TouchgateAPI
import TouchgatePolicyTesting
import TouchgateService

/// The vault's rules on a passkey's user verification, through the service with a scripted
/// reader and a manual clock (the CTAP side, with real clients, is PasskeyTests): the
/// passphrase at least every 72 hours, a touch for every ceremony whatever a secret's reuse
/// window says, and a locked vault refusing before the reader opens.
@Suite struct PasskeyRuleTests {
    /// A sign-in verification at example.org: the ticket, or the error's code and message.
    static func verify(_ rig: RuleRig) async -> Result<PasskeyVerification, ServiceError> {
        do {
            return .success(try await rig.service.passkeyVerify(PasskeyVerifyRequest(rpID: "example.org", ceremony: .signIn),
                                                                interaction: ScriptedInteraction()))
        } catch {
            return .failure(error)
        }
    }

    @Test("passphrase every 72 hours: past it, a passkey verification is refused before the reader and says to unlock; after unlock the finger works again")
    func passphraseEvery72Hours() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        let first = try await Self.verify(rig).get()
        #expect(first.match && first.ticket?.count == 32 && rig.reader.scans == 1)

        rig.clock.advance(by: .seconds(72 * 3600 + 1))
        let scans = rig.reader.scans
        let opens = rig.reader.opens
        guard case .failure(let stale) = await Self.verify(rig) else {
            Issue.record("a verification 72 hours after the passphrase was given a ticket")
            return
        }
        #expect(stale.code == .passphraseRequired && stale.message.contains("touchgate unlock"), "\(stale.code): \(stale.message)")
        #expect(rig.reader.scans == scans && rig.reader.opens == opens, "the reader was not even opened")

        try await rig.service.unlock(interaction: ScriptedInteraction())
        let again = try await Self.verify(rig).get()
        #expect(again.match && rig.reader.scans == scans + 1)
        let records = try await rig.service.auditShow()
        #expect(records.contains { $0.outcome == "denied" && $0.reason.contains("sign in to example.org with a passkey") },
                "the refusal is in the trail: \(records.suffix(4).map(\.reason))")
    }

    @Test("a touch for every ceremony: a secret's reuse window never stands for a passkey's verification, nor one verification for the next; a locked vault refuses before the reader")
    func aTouchEachTimeAndNoneWhenLocked() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        try await rig.store("db", "biometry-any")
        #expect(await rig.release("db") == .value("value of db"))
        #expect(rig.reader.scans == 1)
        rig.clock.advance(by: .seconds(10))
        #expect(try await Self.verify(rig).get().match && rig.reader.scans == 2, "inside the reuse window: a touch all the same")
        #expect(try await Self.verify(rig).get().match && rig.reader.scans == 3, "and again for the next ceremony")

        _ = try await rig.service.lock()
        let opens = rig.reader.opens
        guard case .failure(let locked) = await Self.verify(rig) else {
            Issue.record("a locked vault gave a ticket")
            return
        }
        #expect([.vaultLocked, .passphraseRequired].contains(locked.code), "\(locked.code): \(locked.message)")
        #expect(rig.reader.opens == opens && rig.reader.scans == 3, "the reader was not opened")
    }

    /// A registration at example.org for `user`, as an authenticator that names no policy
    /// (touchgated's and the agent's devices) makes it: the passkey's report.
    static func register(_ rig: RuleRig, _ user: String) async throws -> PasskeyReport {
        let verification = try await rig.service.passkeyVerify(PasskeyVerifyRequest(rpID: "example.org", ceremony: .register),
                                                               interaction: ScriptedInteraction())
        let ticket = try #require(verification.ticket)
        return try await rig.service.passkeyMake(PasskeyMakeRequest(
            rpID: "example.org", rpName: nil, userID: Data(user.utf8), userName: user, displayName: nil, algorithms: [-7],
            excludeList: [], discoverable: true, clientDataHash: Data(repeating: 7, count: 32), ticket: ticket)).passkey
    }

    @Test("renaming a passkey's account: a made-up ticket, a sign-in's ticket, or another account's user id renames nothing; the account's own id with a manage ticket does, once, recorded")
    func renamingTakesAManageTicketAndTheAccountsOwnID() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        let alice = try await Self.register(rig, "alice")
        func rename(_ user: String, ticket: Data, to name: String) async -> ServiceError? {
            do {
                _ = try await rig.service.passkeyUpdate(PasskeyUpdateRequest(
                    credentialID: alice.credentialID, userID: Data(user.utf8), userName: name, displayName: nil, ticket: ticket))
                return nil
            } catch {
                return error
            }
        }
        #expect(await rename("alice", ticket: Data(repeating: 1, count: 32), to: "mallory")?.code == .forbidden)
        let signIn = try await Self.verify(rig).get()
        #expect(signIn.ticketSeconds == 30, "the service says how long it takes its ticket")
        #expect(await rename("alice", ticket: try #require(signIn.ticket), to: "mallory")?.code == .forbidden)
        let manage = try #require(try await rig.service.passkeyVerify(PasskeyVerifyRequest(rpID: nil, ceremony: .manage),
                                                                      interaction: ScriptedInteraction()).ticket)
        // Another account's id is refused before the ticket is spent: the right one then works, once.
        #expect(await rename("bob", ticket: manage, to: "mallory")?.code == .usage)
        #expect(await rename("alice", ticket: manage, to: "alicia") == nil)
        #expect(await rename("alice", ticket: manage, to: "mallory")?.code == .forbidden)
        let listed = try await rig.service.passkeyList(PasskeyListRequest())
        #expect(listed.passkeys.map(\.userName) == ["alicia"])
        let reasons = try await rig.service.auditShow().map(\.reason)
        #expect(reasons.filter { $0.contains("renamed to") } == ["passkey for example.org as alice renamed to alicia"], "\(reasons)")
        #expect(reasons.filter { $0.contains("passkey manage refused") }.count == 3, "each refused ticket is recorded: \(reasons)")
    }

    @Test("policy set --passkey-policy: the passkeys made from then on without a policy named are bound to the current set; a passkey keeps the policy it was made with; a policy a finger cannot satisfy is refused and nothing changes")
    func thePersonChoosesThePolicyOfNewPasskeys() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        #expect(try await rig.service.policyShow().passkeyPolicy == "biometry-any")
        let before = try await Self.register(rig, "alice")
        #expect(before.policy == "biometry-any")

        let set = try await rig.service.policySet(SettingsChange(passkeyPolicy: "biometry-current-set"),
                                                  interaction: ScriptedInteraction())
        #expect(set.passkeyPolicy == "biometry-current-set" && set.lockoutThreshold == 3, "\(set)")
        let after = try await Self.register(rig, "bob")
        #expect(after.policy == "biometry-current-set", "\(after.policy)")
        let listed = try await rig.service.passkeyList(PasskeyListRequest()).passkeys
        #expect(Dictionary(uniqueKeysWithValues: listed.map { ($0.userName ?? "", $0.policy) })
                    == ["alice": "biometry-any", "bob": "biometry-current-set"], "\(listed)")
        let records = try await rig.service.auditShow()
        #expect(records.contains { $0.event == "policy.change" && $0.reason.contains("passkey-policy biometry-any -> biometry-current-set") },
                "\(records.suffix(3).map(\.reason))")

        do {
            _ = try await rig.service.policySet(SettingsChange(passkeyPolicy: "passphrase"), interaction: ScriptedInteraction())
            Issue.record("a passkey policy without a finger was taken")
        } catch {
            #expect(error.code == .usage && error.message.contains("biometry-current-set"), "\(error.message)")
        }
        #expect(try await rig.service.policyShow().passkeyPolicy == "biometry-current-set")
    }
}
