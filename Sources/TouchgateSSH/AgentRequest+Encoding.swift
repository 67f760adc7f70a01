// Requests written as a client would write them. Only tests and the fuzz target need this
// (to play ssh-add and to check that decoding loses nothing), hence package access.
import TouchgateBasics

extension AgentRequest {
    /// The message body a client would send for this request. An add's private key and a
    /// passphrase end up in the returned array, which nothing wipes: for tests only.
    package var body: [UInt8] {
        var writer = SSHWireWriter()
        switch self {
        case .requestIdentities:
            writer.byte(AgentNumber.requestIdentities)
        case .sign(let keyBlob, let data, let flags):
            writer.byte(AgentNumber.signRequest)
            writer.string(keyBlob)
            writer.string(data)
            writer.uint32(flags.rawValue)
        case .add(let addition):
            writer.byte(addition.constraints.isEmpty ? AgentNumber.addIdentity : AgentNumber.addIdentityConstrained)
            writer.string(addition.keyType)
            switch addition.publicKey {
            case .ed25519(let publicBytes):
                writer.string(publicBytes)
                addition.privateKey.withUnsafeBytes { writer.string($0) }
            case .ecdsaP256(let point):
                writer.string(SSHPublicKey.p256CurveName)
                writer.string(point)
                addition.privateKey.withUnsafeBytes { writer.mpint($0) }
            }
            writer.string(addition.comment)
            for constraint in addition.constraints {
                writer.byte(constraint.number)
                switch constraint {
                case .lifetime(let seconds): writer.uint32(seconds)
                case .confirm: break
                case .destinations(let hops):
                    writer.string(AgentDestination.extensionName)
                    writer.string(AgentDestination.encoded(hops))
                }
            }
        case .remove(let keyBlob):
            writer.byte(AgentNumber.removeIdentity)
            writer.string(keyBlob)
        case .removeAll:
            writer.byte(AgentNumber.removeAllIdentities)
        case .lock(let passphrase):
            writer.byte(AgentNumber.lock)
            passphrase.withUnsafeBytes { writer.string($0) }
        case .unlock(let passphrase):
            writer.byte(AgentNumber.unlock)
            passphrase.withUnsafeBytes { writer.string($0) }
        case .extension(let name, let contents):
            writer.byte(AgentNumber.extension)
            writer.string(name)
            writer.raw(contents)
        case .unknown(let type):
            writer.byte(type)
        }
        return writer.bytes
    }

    /// ``body`` with its length prefix.
    package var frame: [UInt8] { AgentFrame.frame(body) }
}
