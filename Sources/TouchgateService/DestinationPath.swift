import FoundationEssentials
import TouchgateAPI
import TouchgateCrypto
import TouchgateSSH
import TouchgateVault
#if canImport(Glibc)
import Glibc
#endif

/// Whether the hops an agent connection was bound over (`session-bind@openssh.com`, one per
/// ssh on the way) are each allowed by a key's destinations (`ssh-add -h`), as OpenSSH's
/// PROTOCOL.agent describes them: the first hop leaves this machine, each later one leaves
/// the host the one before reached, every host is known by a host key the destinations
/// name, and the last hop's login is as a user they allow.
enum DestinationPath: Equatable {
    /// Allowed: the names of the hosts passed through before the last, as the destinations name them.
    case allowed([String])
    case refused(String)

    static func judge(_ bindings: [SSHSessionBinding], user: String, _ destinations: [SSHDestination]) -> DestinationPath {
        let allowed = destinations.map(\.description).joined(separator: ", ")
        guard !bindings.isEmpty else {
            return .refused("the key was added for destinations only (ssh-add -h: \(allowed)), and ssh did not say which "
                            + "host this login is for (OpenSSH 8.9 or later binds it)")
        }
        var from: Data?
        var passed: [String] = []
        for (index, binding) in bindings.enumerated() {
            // Every hop's host must have proved its key: a host on the way could otherwise
            // name any host as the next.
            switch SSHSigningPurpose.proof(of: binding) {
            case .verified: break
            case .forged: return .refused("the proof of hop \(index + 1) does not verify")
            case .unchecked(let type):
                return .refused("hop \(index + 1) is to a host with a \(StoredText.escaped(type)) key, whose proof Touchgate "
                                + "does not check, so it cannot be held to the key's destinations")
            }
            let last = index == bindings.count - 1
            let hop = destinations.first { destination in
                (from.map(destination.fromKeys.contains) ?? destination.fromKeys.isEmpty)
                    && destination.toKeys.contains(binding.hostKey)
                    && (!last || destination.toUser.map { matches(user, pattern: $0) } ?? true)
            }
            guard let hop else {
                let to = SSHPublicKey.fingerprint(ofBlob: [UInt8](binding.hostKey), sha256: SHA256.digest)
                let start = passed.last.map { "from \($0)" } ?? "from this machine"
                let who = last ? " as \(StoredText.escaped(user))" : ""
                return .refused("the hop \(start) to the host with key \(to)\(who) is not among the key's destinations "
                                + "(ssh-add -h: \(allowed))")
            }
            if !last { passed.append(StoredText.escaped(hop.toHost)) }
            from = binding.hostKey
        }
        return .allowed(passed)
    }

    /// Whether `user` matches `pattern` (`*` and `?`), as a destination's user is written.
    static func matches(_ user: String, pattern: String) -> Bool {
        fnmatch(pattern, user, 0) == 0
    }
}
