import FoundationEssentials
import TouchgatePolicy
import TouchgateSSH
import TouchgateCrypto
import TouchgateVault
public import TouchgateAPI

/// Keys for OpenSSH's security-key provider (`libtouchgate-sk.so`): the vault plays the
/// part of a FIDO authenticator. ssh-keygen makes an `sk-ssh-ed25519@openssh.com` key
/// here, its private half sealed like any other; ssh signs with it through the provider,
/// and each signature says in its flags whether a touch was made for it (user presence)
/// and whether an enrolled finger matched (user verification), which a server with
/// `verify-required` demands.
extension TouchgateService {
    /// How a key handle starts: a version byte, so a later layout can be told apart.
    static let keyHandleVersion: UInt8 = 1

    public func sshSkEnroll(_ request: SSHSecurityKeyEnrollRequest) async throws(ServiceError) -> SSHSecurityKeyEnrollment {
        guard !request.application.isEmpty, request.application.utf8.count <= 256,
              !request.application.contains(where: { $0.isNewline || $0 == "\0" }) else {
            throw ServiceError.usage("the security key's application must be 1 to 256 bytes of text on one line "
                                     + "(ssh-keygen uses ssh:)")
        }
        let flags = SecurityKeyFlags(rawValue: request.flags)
        if flags.contains(.resident) {
            throw ServiceError.usage("Touchgate makes no resident (discoverable) keys; run ssh-keygen without -O resident")
        }
        // The seed is made first: an unnamed key is named after its public half.
        let seed = Ed25519Key.generateSeed()
        let name = request.item.isEmpty ? "sk-" + Hex.encode(Array(Ed25519Key.publicKey(seed: seed).prefix(4))) : request.item
        // A touch per signature unless ssh-keygen's -O no-touch-required left presence out;
        // then a signature inside the reuse window carries neither presence nor verification.
        let fresh = flags.contains(.userPresence)
        let report = try await storeKey(name, policy: "biometry-any", fresh: fresh,
                                        origin: "SSH security key made for \(StoredText.escaped(request.application))",
                                        application: request.application) { seed }
        let publicKey = Ed25519Key.publicKey(seed: seed)
        return SSHSecurityKeyEnrollment(key: report, rawPublicKey: Data(publicKey),
                                        keyHandle: Data(Self.keyHandle(publicKey: publicKey, name: report.name)),
                                        flags: request.flags)
    }

    public func sshSkSign(_ request: SSHSecurityKeySignRequest,
                                   interaction: any Interaction) async throws(ServiceError) -> SSHSecurityKeySignature {
        try await withExistingStore(orElse: noVault) { store in
            let context = try store.vault()
            try context.requireIntactState()
            guard let key = try context.custody.currentKey() else {
                try context.record(.itemRead, .denied, reason: "SSH security-key signature: vault locked")
                throw ServiceError.vaultLocked
            }
            let unknown = ServiceError(.notFound, "the vault holds no security key for this key handle (it was removed, "
                                       + "or made in another vault); touchgate ssh list shows the keys it holds")
            guard let (publicKey, name) = Self.parseKeyHandle([UInt8](request.keyHandle)),
                  let info = try Self.findItem(name, in: context.vault), info.kind == .sshSecurityKey, !info.isInvalidated
            else { throw unknown }
            let secured = try SecuredKey(info, context.vault.item(named: info.name, key: key).value)
            guard secured.rawEd25519PublicKey == publicKey, let application = secured.application else { throw unknown }
            guard application == request.application else {
                try context.record(.itemRead, .denied, item: info.name,
                                   reason: "SSH security-key signature refused: asked for another application")
                throw ServiceError(.forbidden, "the security key was made for \(StoredText.escaped(application)), not "
                                   + "\(StoredText.escaped(request.application)); nothing was signed")
            }
            let shown = StoredText.escaped(info.name)
            let purpose: String
            // Judged with the bindings of the provider's connection, as an ordinary key's signature
            // is: a provider that reached the agent through forwarding is another host asking,
            // and a `verify-required` server must never get the verified flag from it.
            let signed = SSHSignRequest(publicKey: Data(try secured.blob), data: request.data, flags: 0,
                                        bindings: request.bindings)
            switch SSHSigningPurpose.judge(signed, keyName: shown, what: "security key") {
            case .refused(let why):
                try context.record(.itemRead, .denied, item: info.name, reason: "SSH signature refused: \(why)")
                throw ServiceError(.forbidden, "\(why); nothing was signed")
            case .allowed(let words):
                purpose = words
            }
            let grant = try await authorize(try Self.signingDescriptor(of: info, for: purpose, in: context), .read,
                                            context: context, key: key, device: nil, interaction: interaction, purpose: purpose)
            // Presence: someone acted for this signature (a finger or the passphrase);
            // verification: an enrolled finger matched for it. A reused session gives neither.
            var flags: SecurityKeyFlags = []
            if !grant.reusedSession {
                flags.insert(.userPresence)
                if grant.matchedPrint != nil { flags.insert(.userVerification) }
            }
            // The counter is the audit trail's newest sequence number, which includes this
            // signature's own record: it only grows, and it names where to look.
            let counter = UInt32(truncatingIfNeeded: max(0, try context.audit.lastSequence()))
            let message = SecurityKeySignedMessage.bytes(application: application, flags: flags, counter: counter,
                                                         data: [UInt8](request.data), sha256: SHA256.digest)
            return SSHSecurityKeySignature(signature: Data(try secured.sign(message)),
                                           flags: flags.rawValue, counter: counter, purpose: purpose)
        }
    }

    /// A key handle: the version, the 32-byte public key, then the item's name. It names a
    /// key without holding anything secret; the public key tells a key made anew under the
    /// same name from the one the handle was made for.
    static func keyHandle(publicKey: [UInt8], name: String) -> [UInt8] {
        [keyHandleVersion] + publicKey + Array(name.utf8)
    }

    static func parseKeyHandle(_ handle: [UInt8]) -> (publicKey: [UInt8], name: String)? {
        let keyLength = SSHPublicKey.ed25519KeyLength
        guard handle.count > 1 + keyLength, handle[0] == keyHandleVersion,
              let name = String(validating: handle[(1 + keyLength)...], as: UTF8.self) else { return nil }
        return (Array(handle[1...keyLength]), name)
    }
}
