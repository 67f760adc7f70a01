import Foundation
import Testing
import TouchgateAPI
import TouchgatePolicyTesting
import TouchgateSSH
import TouchgateService
import TouchgateVault

/// SSH keys in the vault, through the service alone: made and listed, never released,
/// and each signature decided by the key's policy for what the data is, with a scripted
/// reader (the agent's socket and the real ssh programs are in the end-to-end suite).
@Suite struct SSHServiceTests {
    /// A login's user-authentication request (RFC 4252, section 7) for `user` with `key`.
    static func login(user: String, session: [UInt8], key: [UInt8], hostKey: [UInt8]? = nil) -> Data {
        var writer = SSHWireWriter()
        writer.string(session)
        writer.byte(50)
        writer.string(user)
        writer.string("ssh-connection")
        writer.string(hostKey == nil ? "publickey" : "publickey-hostbound-v00@openssh.com")
        writer.bool(true)
        writer.string("ssh-ed25519")
        writer.string(key)
        if let hostKey { writer.string(hostKey) }
        return Data(writer.bytes)
    }

    /// What `ssh-keygen -Y sign -n NAMESPACE` asks an agent to sign.
    static func sshsig(namespace: String) -> Data {
        var writer = SSHWireWriter()
        writer.raw(Array("SSHSIG".utf8))
        writer.string(namespace)
        writer.string("")
        writer.string("sha512")
        writer.string([UInt8](repeating: 7, count: 64))
        return Data(writer.bytes)
    }

    /// A host's key and its proof of session `session`.
    static func binding(session: [UInt8], forwarding: Bool = false, forge: Bool = false) -> SSHSessionBinding {
        let seed = Ed25519Key.generateSeed()
        var signature = Ed25519Key.sign(session, seed: seed)
        if forge { signature[0] ^= 1 }
        let host = SSHPublicKey.ed25519(Ed25519Key.publicKey(seed: seed))
        return SSHSessionBinding(hostKey: Data(host.blob), sessionID: Data(session),
                                 signature: Data(host.signatureBlob(signature)), forwarding: forwarding)
    }

    /// Signs `data` with `key`; the report, or the error's code.
    static func sign(_ rig: RuleRig, _ key: SSHKeyReport, _ data: Data, bindings: [SSHSessionBinding] = [],
                     interaction: ScriptedInteraction = ScriptedInteraction()) async -> Result<SSHSignatureReport, ServiceError> {
        do {
            return .success(try await rig.service.sshSign(SSHSignRequest(publicKey: key.publicKey, data: data, flags: 0,
                                                                         bindings: bindings),
                                                          interaction: interaction))
        } catch {
            return .failure(error)
        }
    }

    @Test("a key made in the vault lists with its public half and OpenSSH's fingerprint, and is never released as a secret")
    func keygenListsAndNeverReleases() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: false)
        #expect(key.type == "ssh-ed25519")
        #expect(key.authorizedKey.hasPrefix("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5") && key.authorizedKey.hasSuffix(" work"))
        #expect(key.fingerprint.hasPrefix("SHA256:") && key.fingerprint.count == 7 + 43)
        #expect(try await rig.service.sshList() == [key])
        #expect(try await rig.service.secretList().isEmpty, "secret list shows secrets only")
        let opens = rig.reader.opens
        do {
            _ = try await rig.service.secretGet("work", interaction: ScriptedInteraction())
            Issue.record("an SSH key was released")
        } catch {
            #expect(error.code == .forbidden)
        }
        #expect(rig.reader.opens == opens, "refused before the reader is opened")
        do {
            _ = try await rig.service.secretAdd("work", value: rig.base.value("x"), policy: "biometry-any", fresh: false,
                                                replace: true, interaction: ScriptedInteraction())
            Issue.record("a secret replaced an SSH key")
        } catch {
            #expect(error.code == .alreadyExists)
        }
        #expect(try await rig.service.sshList() == [key], "the key is still there")
    }

    @Test("which keys the agents offer is the service's: withdrawn, offered for a lifetime, expired, each recorded")
    func offersAreKeptAndRecorded() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: false)
        #expect(try await rig.service.sshList().map(\.isOffered) == [true])
        let withdrawn = try await rig.service.sshOffer(.withdraw([key.publicKey]))
        #expect(withdrawn.map(\.offered) == [false])
        #expect(try await rig.service.sshList().map(\.isOffered) == [false], "a new listing (a restarted agent) keeps it")
        // As ssh-agent: a key not offered cannot be withdrawn again, and does not sign.
        await #expect { _ = try await rig.service.sshOffer(.withdraw([key.publicKey])) } throws: {
            ($0 as? ServiceError)?.code == .notFound
        }
        let opens = rig.reader.opens
        if case .failure(let error) = await Self.sign(rig, key, Self.sshsig(namespace: "file")) {
            #expect(error.code == .forbidden && error.message.contains("touchgate ssh offer work"), "\(error.message)")
        } else {
            Issue.record("a withdrawn key signed")
        }
        #expect(rig.reader.opens == opens, "refused before the reader is opened")
        // Offered again for a minute: listed and signing, then gone when the minute is up.
        let offered = try await rig.service.sshOffer(.offer(key.publicKey, lifetime: 60))
        #expect(offered.first?.isOffered == true && offered.first?.offeredUntil != nil)
        _ = try await Self.sign(rig, key, Self.sshsig(namespace: "file")).get()
        rig.clock.advance(by: .seconds(61))
        #expect(try await rig.service.sshList().map(\.isOffered) == [false], "the lifetime ran out")
        await #expect { _ = try await rig.service.sshOffer(.offer(key.publicKey, lifetime: 0)) } throws: {
            ($0 as? ServiceError)?.code == .usage
        }
        let records = try await rig.service.auditShow().filter { $0.event == "ssh.offer" }
        #expect(records.map(\.reason) == ["SSH key \(key.fingerprint) withdrawn from the agents",
                                          "SSH key \(key.fingerprint) offered to the agents for 60 s"], "\(records.map(\.reason))")
        #expect(records.allSatisfy { $0.item == "work" })
    }

    @Test("a withdrawal deleted from the database does not bring the key back: the state fails its check and nothing signs")
    func offersCannotBeEditedAway() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: false)
        _ = try await rig.service.sshOffer(.withdraw([key.publicKey]))
        try rig.base.sql("DELETE FROM vault_state WHERE key = 'ssh.offers'")
        let opens = rig.reader.opens
        if case .failure(let error) = await Self.sign(rig, key, Self.sshsig(namespace: "file")) {
            #expect(error.code == .stateTampered, "\(error.code): \(error.message)")
        } else {
            Issue.record("the key signed once its withdrawal was deleted from the database")
        }
        #expect(rig.reader.opens == opens, "refused before the reader is opened")
    }

    @Test("an agent's confirmation of a key's use is a touch recorded as that approval, with the agent's question")
    func confirmationIsRecordedAsTheApproval() async throws {
        let rig = try await RuleRig.ready([.stranger, .finger("right-index")])
        defer { rig.remove() }
        let question = "Allow use of key /home/ana/.ssh/id_ed25519?\nKey fingerprint SHA256:abc."
        let refused = try await rig.service.sshConfirm(question, interaction: ScriptedInteraction())
        #expect(!refused.match)
        let approved = try await rig.service.sshConfirm(question, interaction: ScriptedInteraction())
        #expect(approved.match)
        let records = try await rig.service.auditShow().filter { $0.reason.contains("approve one use of an SSH key") }
        #expect(records.map(\.outcome) == ["failure", "success"], "\(records.map(\.reason))")
        #expect(records.allSatisfy { $0.reason.contains("(Allow use of key /home/ana/.ssh/id_ed25519? Key fingerprint SHA256:abc.)") },
                "the question, on one line: \(records.map(\.reason))")
    }

    @Test("a login signature needs the finger, says who logs in, verifies, and is audited with its purpose")
    func loginSignatureNeedsTheFinger() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .stranger])
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: true)
        let data = Self.login(user: "git", session: [1, 2, 3], key: [UInt8](key.publicKey))
        let interaction = ScriptedInteraction()
        let report = try await Self.sign(rig, key, data, interaction: interaction).get()
        #expect(report.purpose == "use SSH key 'work' to log in as git")
        #expect(interaction.events.contains { $0.message.contains("to use SSH key 'work' to log in as git") },
                "the prompt says what is signed: \(interaction.events.map(\.message))")
        let signature = try SSHPublicKey.ed25519Signature(fromBlob: [UInt8](report.signature))
        guard case .ed25519(let publicKey) = try SSHPublicKey(blob: [UInt8](key.publicKey)) else {
            Issue.record("not an Ed25519 key"); return
        }
        #expect(Ed25519Key.verify(signature, of: [UInt8](data), publicKey: publicKey))
        // A fresh key: the next signature needs a touch again, and a stranger gets none.
        if case .failure(let error) = await Self.sign(rig, key, data) {
            #expect(error.code == .noMatch)
        } else {
            Issue.record("a stranger's finger signed")
        }
        let records = try await rig.service.auditShow().filter { $0.item == "work" && $0.event == "item.read" }
        #expect(records.map(\.outcome) == ["success", "failure"])
        #expect(records.allSatisfy { $0.reason.hasPrefix("use SSH key 'work' to log in as git: ") }, "\(records.map(\.reason))")
    }

    @Test("a git or file signature says so; unrecognised data says its size")
    func signaturePurposes() async throws {
        let rig = try await RuleRig.ready(Array(repeating: .finger("right-index"), count: 3))
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: false)
        #expect(try await Self.sign(rig, key, Self.sshsig(namespace: "git")).get().purpose
                == "use SSH key 'work' to sign a git commit or tag")
        #expect(try await Self.sign(rig, key, Self.sshsig(namespace: "file")).get().purpose
                == "use SSH key 'work' to sign a file")
        #expect(try await Self.sign(rig, key, Data([9, 9, 9])).get().purpose
                == "use SSH key 'work' to sign 3 bytes that are neither a login nor a file signature")
        #expect(rig.reader.scans == 3, "each purpose its own touch")
    }

    @Test("the reuse window serves a key for the destination it was touched for, and no other")
    func reuseWindowPerDestination() async throws {
        let rig = try await RuleRig.ready(Array(repeating: .finger("right-index"), count: 3))
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: false)
        let git = Self.sshsig(namespace: "git")
        _ = try await Self.sign(rig, key, git).get()
        _ = try await Self.sign(rig, key, git).get()
        #expect(rig.reader.scans == 1, "the same destination again, inside the window: no touch")
        let login = Self.login(user: "alice", session: [1, 2, 3], key: [UInt8](key.publicKey))
        _ = try await Self.sign(rig, key, login).get()
        #expect(rig.reader.scans == 2, "another destination needs a touch of its own")
        _ = try await Self.sign(rig, key, git).get()
        #expect(rig.reader.scans == 3, "and going back needs one again: the window follows the last destination")
        let reasons = try await rig.service.auditShow().filter { $0.item == "work" && $0.event == "item.read" }.map(\.reason)
        #expect(reasons.filter { $0.contains("reused session") }.count == 1, "\(reasons)")
    }

    @Test("where the store stays open, a listing left from before a key was replaced under its name signs nothing old")
    func keptListingIsOnlyAHint() async throws {
        let rig = try await RuleRig.ready(Array(repeating: .finger("right-index"), count: 3))
        defer { rig.remove() }
        var service = rig.service
        service.openStores = OpenStores()
        let old = try await service.sshKeygen("work", policy: "biometry-any", fresh: true)
        #expect(try await service.sshList() == [old])
        _ = try await service.secretRm("work", interaction: ScriptedInteraction())
        let new = try await service.sshKeygen("work", policy: "biometry-any", fresh: true)
        #expect(new.publicKey != old.publicKey)
        let data = Self.sshsig(namespace: "file")
        func sign(_ key: SSHKeyReport) async throws(ServiceError) -> SSHSignatureReport {
            try await service.sshSign(SSHSignRequest(publicKey: key.publicKey, data: data, flags: 0, bindings: []),
                                      interaction: ScriptedInteraction())
        }
        // The kept listing still names 'work' for the old public half: the key unsealed under
        // that name is the new one, so nothing is signed for the old half.
        do {
            _ = try await sign(old)
            Issue.record("a removed key's public half got a signature")
        } catch {
            #expect(error.code == .notFound, "\(error)")
        }
        let signature = try SSHPublicKey.ed25519Signature(fromBlob: [UInt8](try await sign(new).signature))
        guard case .ed25519(let publicKey) = try SSHPublicKey(blob: [UInt8](new.publicKey)) else {
            Issue.record("not an Ed25519 key"); return
        }
        #expect(Ed25519Key.verify(signature, of: [UInt8](data), publicKey: publicKey))
        #expect(try await service.sshList() == [new])
    }

    @Test("where the store stays open, the listing served without a check follows keys made and removed by another process, and a lock")
    func keptListingFollowsTheStore() async throws {
        let rig = try await RuleRig.ready([])
        defer { rig.remove() }
        var service = rig.service
        service.openStores = OpenStores()
        // Another process: a service over the same directory with connections of its own,
        // as `touchgate ssh keygen` run beside the agent (the held key is shared).
        let other = rig.service
        let first = try await service.sshKeygen("one", policy: "biometry-any", fresh: false)
        #expect(try await service.sshList() == [first])
        #expect(service.keptKeyListing() == [first], "a second listing needs no check of the store")

        let second = try await other.sshKeygen("two", policy: "biometry-any", fresh: false)
        #expect(service.keptKeyListing() == nil)
        #expect(try await service.sshList().sorted { $0.name < $1.name } == [first, second])
        #expect(service.keptKeyListing()?.count == 2)

        _ = try await other.secretRm("one", interaction: ScriptedInteraction())
        #expect(try await service.sshList() == [second])

        // The key gone from custody (as an idle timeout lets it go), with nothing written.
        #expect(service.keptKeyListing() == [second])
        let vault = try Vault.open(database: TouchgateDatabase(location: rig.service.location), owner: "alice")
        #expect(try rig.base.custody(for: vault).release())
        #expect(service.keptKeyListing() == nil, "a key no longer held lists nothing without the check")
        await #expect(throws: ServiceError.self) { try await service.sshList() }
    }

    @Test("a bound session names the host's key; forwarded, forged, or for another session is refused before the reader")
    func sessionBindings() async throws {
        // One touch per destination: the host, its three namings, the unchecked and the ECDSA host.
        let rig = try await RuleRig.ready(Array(repeating: .finger("right-index"), count: 6))
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: false)
        let session: [UInt8] = Array(repeating: 5, count: 32)
        let bound = Self.binding(session: session)
        let data = Self.login(user: "alice", session: session, key: [UInt8](key.publicKey), hostKey: [UInt8](bound.hostKey))
        let report = try await Self.sign(rig, key, data, bindings: [bound]).get()
        #expect(report.purpose.hasPrefix("use SSH key 'work' to log in as alice on the host with key SHA256:"))
        // With what the user's known_hosts says of the host key, as the agent looks it up.
        for (names, hashed, words) in [(["git.example.com"], 0, "on git.example.com (host key SHA256:"),
                                       ([], 1, "on a host your known_hosts lists under a hashed name (host key SHA256:"),
                                       ([], 0, "on a host not in your known_hosts (host key SHA256:")] {
            var named = bound
            named.hostNames = names
            named.hashedHostEntries = hashed
            let report = try await Self.sign(rig, key, data, bindings: [named]).get()
            #expect(report.purpose.contains("log in as alice " + words), "\(report.purpose)")
        }

        let refused: [(String, Data, [SSHSessionBinding])] = [
            ("forwarded", data, [Self.binding(session: session, forwarding: true)]),
            ("forged", data, [Self.binding(session: session, forge: true)]),
            ("another session", Self.login(user: "alice", session: [6], key: [UInt8](key.publicKey)), [bound]),
            ("another host", Self.login(user: "alice", session: session, key: [UInt8](key.publicKey),
                                        hostKey: [UInt8](Self.binding(session: session).hostKey)), [bound]),
        ]
        // An RSA host key is not checked here: the words say so, and it signs.
        var rsa = SSHWireWriter()
        rsa.string("ssh-rsa")
        rsa.string([1, 0, 1])
        rsa.string([UInt8](repeating: 0xC5, count: 256))
        let unchecked = SSHSessionBinding(hostKey: Data(rsa.bytes), sessionID: Data(session), signature: Data([1, 2, 3]),
                                          forwarding: false)
        let other = try await Self.sign(rig, key, Self.login(user: "alice", session: session, key: [UInt8](key.publicKey)),
                                        bindings: [unchecked]).get()
        #expect(other.purpose.hasPrefix("use SSH key 'work' to log in as alice on a host whose ssh-rsa key SHA256:")
                && other.purpose.hasSuffix(" was not checked"), "\(other.purpose)")
        // An ECDSA P-256 host key's proof is checked: a real one verifies, a made-up one is forged.
        let host = try await ReferenceP256.generate()
        let hostBlob = SSHPublicKey.ecdsaP256(host.point)
        let proof = hostBlob.signatureBlob(try await ReferenceP256.sign([UInt8](session), scalar: host.scalar))
        let proved = SSHSessionBinding(hostKey: Data(hostBlob.blob), sessionID: Data(session), signature: Data(proof),
                                       forwarding: false)
        let viaECDSA = try await Self.sign(rig, key, Self.login(user: "alice", session: session, key: [UInt8](key.publicKey)),
                                           bindings: [proved]).get()
        #expect(viaECDSA.purpose.contains("on the host with key SHA256:"), "\(viaECDSA.purpose)")
        var madeUp = proved
        madeUp.signature = Data(hostBlob.signatureBlob([UInt8](repeating: 7, count: 64)))
        let refusedToo = refused + [("a forged ECDSA proof", Self.login(user: "alice", session: session, key: [UInt8](key.publicKey)),
                                     [madeUp])]

        let opens = rig.reader.opens
        let oversized = Data(repeating: 0x41, count: 16 * 1024 + 1)
        if case .failure(let error) = await Self.sign(rig, key, oversized) {
            #expect(error.code == .forbidden && error.message.contains("16385 bytes"), "\(error.message)")
        } else {
            Issue.record("signed 16 KiB and more")
        }
        for (what, data, bindings) in refusedToo {
            if case .failure(let error) = await Self.sign(rig, key, data, bindings: bindings) {
                #expect(error.code == .forbidden, "\(what): \(error.message)")
            } else {
                Issue.record("\(what): signed")
            }
        }
        #expect(rig.reader.opens == opens, "refusals never open the reader")
        let denied = try await rig.service.auditShow().filter { $0.item == "work" && $0.outcome == "denied" }
        #expect(denied.count == refusedToo.count + 1)
    }

    @Test("a key brought from elsewhere is sealed with its own public half; a bad seed or a taken name stores nothing")
    func addedKeys() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        let seed = Ed25519Key.generateSeed()
        let blob = Data(SSHPublicKey.ed25519(Ed25519Key.publicKey(seed: seed)).blob)
        let added = try await rig.service.sshAdd("laptop", publicKey: blob, seed: { seed }, policy: "biometry-any", fresh: true)
        #expect(added.publicKey == blob)
        #expect(added.fresh)
        let short = SecretBytes(copying: [UInt8](repeating: 1, count: 31))
        await #expect(throws: ServiceError.self) {
            _ = try await rig.service.sshAdd("short", publicKey: blob, seed: { short }, policy: "biometry-any", fresh: false)
        }
        // A private half that is not the public key's is refused, and nothing is stored.
        let other = Ed25519Key.generateSeed()
        await #expect(throws: ServiceError.self) {
            _ = try await rig.service.sshAdd("mismatched", publicKey: blob, seed: { other }, policy: "biometry-any", fresh: false)
        }
        let asked = Counter()
        await #expect(throws: ServiceError.self) {
            _ = try await rig.service.sshAdd("laptop", publicKey: blob, seed: { asked.increment(); return seed },
                                             policy: "biometry-any", fresh: false)
        }
        #expect(asked.value == 0, "a taken name is refused before the key is read")
        #expect(try await rig.service.sshList().map(\.name) == ["laptop"])
        let records = try await rig.service.auditShow().filter { $0.event == "item.write" }
        #expect(records.map(\.reason) == ["SSH key added (ssh-ed25519, biometry-any, fresh touch)"])
    }

    @Test("two keys made under one name at once: one is stored and recorded, the other refused")
    func concurrentKeygen() async throws {
        let rig = try await RuleRig.ready()
        defer { rig.remove() }
        let service = rig.service
        let made = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask { (try? await service.sshKeygen("work", policy: "biometry-any", fresh: false)) != nil }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(made == 1)
        #expect(try await service.sshList().count == 1)
        let records = try await service.auditShow().filter { $0.event == "item.write" && $0.item == "work" }
        #expect(records.map(\.outcome) == ["success"])
    }

    @Test("editing the database to make a key a secret does not release it")
    func kindIsAuthenticated() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        _ = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: false)
        try rig.base.sql("UPDATE vault_item SET kind = 'secret' WHERE name = 'work'")
        do {
            let value = try await rig.service.secretGet("work", interaction: ScriptedInteraction())
            Issue.record("released \(value.count) bytes of a key relabelled as a secret")
        } catch {
            #expect(error.code == .integrity, "\(error.message)")
        }
    }

    /// Issue 45: a key added with destinations (ssh-add -h) signs a login over the hops they
    /// name, through forwarding too, and nothing else; without them forwarding is refused.
    @Test("destinations let a key be used over the hops they name and over no other")
    func destinationsAllowNamedHops() async throws {
        let rig = try await RuleRig.ready(Array(repeating: .finger("right-index"), count: 4))
        defer { rig.remove() }
        let key = try await rig.service.sshKeygen("work", policy: "biometry-any", fresh: true)
        let bastion = Self.binding(session: [1], forwarding: true)
        let web = Self.binding(session: [2])
        let elsewhere = Self.binding(session: [2])
        let login = Self.login(user: "deploy", session: [2], key: [UInt8](key.publicKey), hostKey: [UInt8](web.hostKey))
        let toElsewhere = Self.login(user: "deploy", session: [2], key: [UInt8](key.publicKey),
                                     hostKey: [UInt8](elsewhere.hostKey))
        func refusal(_ data: Data, _ bindings: [SSHSessionBinding]) async -> String? {
            if case .failure(let error) = await Self.sign(rig, key, data, bindings: bindings) { return error.message }
            return nil
        }
        // Without destinations, the forwarded login is refused and the refusal says how to allow it.
        #expect(await refusal(login, [bastion, web])?.contains("ssh-add -h") == true)

        let hops = [
            SSHDestination(fromHost: nil, fromKeys: [], toUser: nil, toHost: "bastion", toKeys: [bastion.hostKey]),
            SSHDestination(fromHost: "bastion", fromKeys: [bastion.hostKey], toUser: "dep*", toHost: "web",
                           toKeys: [web.hostKey]),
        ]
        _ = try await rig.service.sshOffer(.offer(key.publicKey, lifetime: nil, destinations: hops))
        let report = try await Self.sign(rig, key, login, bindings: [bastion, web]).get()
        #expect(report.purpose.contains("log in as deploy on ") && report.purpose.hasSuffix(" through bastion"),
                "the prompt names the hops: \(report.purpose)")
        #expect(rig.reader.scans == 1)

        let refused: [(String, Data, [SSHSessionBinding], String)] = [
            ("a host not named", toElsewhere, [bastion, elsewhere], "not among the key's destinations"),
            ("another user", Self.login(user: "root", session: [2], key: [UInt8](key.publicKey), hostKey: [UInt8](web.hostKey)),
             [bastion, web], "as root is not among"),
            ("straight to web, not from bastion", login, [web], "from this machine to the host"),
            ("a forged hop", login, [Self.binding(session: [1], forwarding: true, forge: true), web], "does not verify"),
            ("not a login", Self.sshsig(namespace: "git"), [bastion, web], "signs logins to them and nothing else"),
            ("no binding", login, [], "did not say which host"),
        ]
        for (what, data, bindings, words) in refused {
            let message = await refusal(data, bindings)
            #expect(message?.contains(words) == true, "\(what): \(message ?? "signed")")
        }
        #expect(rig.reader.scans == 1, "no refusal asked for a finger")
        let records = try await rig.service.auditShow().filter { $0.event == "ssh.offer" }
        #expect(records.last?.reason.contains("over bastion, bastion>dep*@web") == true, "\(records.map(\.reason))")

        // Offered again without them (ssh-add without -h), the key is this machine's again.
        _ = try await rig.service.sshOffer(.offer(key.publicKey, lifetime: nil))
        #expect(await refusal(login, [bastion, web])?.contains("through agent forwarding") == true)
    }
}

/// Counts calls from any task.
final class Counter: @unchecked Sendable {
    // @unchecked Sendable: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }

    @Test("an ECDSA P-256 key is made or added, listed as OpenSSH names it, and signs what verifies against it")
    func ecdsaKeys() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        let made = try await rig.service.sshKeygen("nist", type: "ecdsa-sha2-nistp256", policy: "biometry-any", fresh: true)
        #expect(made.type == "ecdsa-sha2-nistp256")
        #expect(made.authorizedKey.hasPrefix("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY"))
        guard case .ecdsaP256(let point) = try SSHPublicKey(blob: [UInt8](made.publicKey)) else {
            Issue.record("not a P-256 key"); return
        }
        let data = SSHServiceTests.sshsig(namespace: "file")
        let report = try await SSHServiceTests.sign(rig, made, data).get()
        let signature = try SSHPublicKey.p256Signature(fromBlob: [UInt8](report.signature))
        #expect(try await ReferenceP256.verify(signature, of: [UInt8](data), point: point))
        var altered = [UInt8](data)
        altered[altered.count - 1] ^= 1
        #expect(try await !ReferenceP256.verify(signature, of: altered, point: point))

        // Added from elsewhere: the scalar must be the point's.
        let foreign = try await ReferenceP256.generate()
        let blob = Data(SSHPublicKey.ecdsaP256(foreign.point).blob)
        let scalar = SecretBytes(copying: foreign.scalar)
        let added = try await rig.service.sshAdd("imported", publicKey: blob, seed: { scalar }, policy: "biometry-any", fresh: true)
        #expect(added.publicKey == blob && added.type == "ecdsa-sha2-nistp256")
        let wrong = SecretBytes(copying: try await ReferenceP256.generate().scalar)
        await #expect(throws: ServiceError.self) {
            _ = try await rig.service.sshAdd("wrong", publicKey: blob, seed: { wrong }, policy: "biometry-any", fresh: true)
        }
        let imported = try await SSHServiceTests.sign(rig, added, data).get()
        #expect(try await ReferenceP256.verify(SSHPublicKey.p256Signature(fromBlob: [UInt8](imported.signature)),
                                               of: [UInt8](data), point: foreign.point))
        #expect(Set(try await rig.service.sshList().map(\.name)) == ["nist", "imported"])
    }
}
