import Foundation
import Testing
import TouchgateAPI
import TouchgateCrypto
import TouchgatePolicyTesting
import TouchgateSSH
import TouchgateService
import TouchgateVault

/// Security keys (`sk-ssh-ed25519`) through the service alone: the vault as the FIDO
/// authenticator OpenSSH's provider talks to. The real ssh-keygen, ssh and a
/// `verify-required` sshd are in the end-to-end suite (SecurityKeyTests).
@Suite struct SecurityKeyServiceTests {
    static func verifies(_ signed: SSHSecurityKeySignature, publicKey: Data, application: String, data: Data) -> Bool {
        let message = SecurityKeySignedMessage.bytes(application: application, flags: SecurityKeyFlags(rawValue: signed.flags),
                                                     counter: signed.counter, data: [UInt8](data), sha256: SHA256.digest)
        return Ed25519Key.verify([UInt8](signed.signature), of: message, publicKey: [UInt8](publicKey))
    }

    @Test("a match signs with presence and verification, the counter grows, and the assertion verifies")
    func matchedSignatures() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index"), .stranger])
        defer { rig.remove() }
        let made = try await rig.service.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: "", application: "ssh:", flags: 0x05))
        #expect(made.key.name.hasPrefix("sk-") && made.key.type == "sk-ssh-ed25519@openssh.com" && made.key.fresh)
        #expect(made.key.authorizedKey.hasPrefix("sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t"))
        #expect(made.rawPublicKey.count == 32 && made.flags == 0x05)
        #expect(try await rig.service.sshList() == [made.key])
        await #expect(throws: ServiceError.self, "a security key is never released") {
            _ = try await rig.service.secretGet(made.key.name, interaction: ScriptedInteraction())
        }

        let data = Data("a login request".utf8)
        let request = SSHSecurityKeySignRequest(application: "ssh:", keyHandle: made.keyHandle, flags: 0x05, data: data)
        let interaction = ScriptedInteraction()
        let first = try await rig.service.sshSkSign(request, interaction: interaction)
        let second = try await rig.service.sshSkSign(request, interaction: ScriptedInteraction())
        #expect(first.flags == 0x05 && second.flags == 0x05, "presence and verification after a match")
        #expect(second.counter > first.counter, "\(first.counter) then \(second.counter)")
        #expect(Self.verifies(first, publicKey: made.rawPublicKey, application: "ssh:", data: data))
        #expect(!Self.verifies(first, publicKey: made.rawPublicKey, application: "ssh:other", data: data))
        #expect(interaction.events.contains { $0.message.contains("to use security key '\(made.key.name)'") },
                "\(interaction.events.map(\.message))")
        await #expect(throws: ServiceError.self, "a stranger's finger signs nothing") {
            _ = try await rig.service.sshSkSign(request, interaction: ScriptedInteraction())
        }
    }

    @Test("a key without presence signs inside the reuse window with neither flag")
    func reusedSessionIsNotVerified() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        let made = try await rig.service.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: "relaxed", application: "ssh:", flags: 0))
        #expect(!made.key.fresh)
        let request = SSHSecurityKeySignRequest(application: "ssh:", keyHandle: made.keyHandle, flags: 0, data: Data([1]))
        let touched = try await rig.service.sshSkSign(request, interaction: ScriptedInteraction())
        let reused = try await rig.service.sshSkSign(request, interaction: ScriptedInteraction())
        #expect(touched.flags == 0x05 && reused.flags == 0, "\(touched.flags) then \(reused.flags)")
        #expect(Self.verifies(reused, publicKey: made.rawPublicKey, application: "ssh:", data: Data([1])))
    }

    @Test("another application, an unknown, altered or stale handle, ECDSA and resident keys are refused before the reader")
    func refusals() async throws {
        let rig = try await RuleRig.ready([])
        defer { rig.remove() }
        let made = try await rig.service.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: "laptop", application: "ssh:", flags: 1))
        let opens = rig.reader.opens
        var altered = made.keyHandle
        altered[5] ^= 1
        let cases: [(String, SSHSecurityKeySignRequest, ErrorCode)] = [
            ("another application", .init(application: "ssh:other", keyHandle: made.keyHandle, flags: 1, data: Data()), .forbidden),
            ("an altered handle", .init(application: "ssh:", keyHandle: altered, flags: 1, data: Data()), .notFound),
            ("a cut handle", .init(application: "ssh:", keyHandle: made.keyHandle.prefix(20), flags: 1, data: Data()), .notFound),
            ("no handle", .init(application: "ssh:", keyHandle: Data(), flags: 1, data: Data()), .notFound),
        ]
        for (what, request, code) in cases {
            do {
                _ = try await rig.service.sshSkSign(request, interaction: ScriptedInteraction())
                Issue.record("\(what) signed")
            } catch {
                #expect(error.code == code, "\(what): \(error.message)")
            }
        }
        #expect(rig.reader.opens == opens, "every refusal came before the reader")
        // A key made anew under the same name is another key: the old handle names nothing.
        try await rig.service.secretRm("laptop", interaction: ScriptedInteraction())
        _ = try await rig.service.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: "laptop", application: "ssh:", flags: 1))
        await #expect(throws: ServiceError.self) {
            _ = try await rig.service.sshSkSign(.init(application: "ssh:", keyHandle: made.keyHandle, flags: 1, data: Data()),
                                                interaction: ScriptedInteraction())
        }
        await #expect(throws: ServiceError.self, "no resident keys") {
            _ = try await rig.service.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: "", application: "ssh:", flags: 0x21))
        }
        await #expect(throws: ServiceError.self, "an application on two lines") {
            _ = try await rig.service.sshSkEnroll(SSHSecurityKeyEnrollRequest(item: "", application: "ssh:\nx", flags: 1))
        }
    }
}
