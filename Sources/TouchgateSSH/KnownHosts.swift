// The names a known_hosts file gives a host key, so a prompt can say "log in to
// git.example.com" for a session whose host key the server proved. The file is the
// user's own (what ssh itself trusts), read by the agent that runs as that user.
import FoundationEssentials

/// What a known_hosts file says of one host key.
public enum KnownHosts {
    /// The names a known_hosts text (OpenSSH's format, `sshd(8)`) gives the key whose
    /// public blob is `hostKey`: plain names as written (`[host]:port` as `host:port`),
    /// in order, without repeats, with `hashedEntries` counting the lines that match the
    /// key but hide their names (`HashKnownHosts`). Negated patterns, wildcards,
    /// `@cert-authority` and `@revoked` lines name nothing.
    public static func names(for hostKey: [UInt8], in text: String) -> (names: [String], hashedEntries: Int) {
        var names: [String] = []
        var hashed = 0
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let first = fields.first, !first.hasPrefix("#"), !first.hasPrefix("@"), fields.count >= 3,
                  let blob = Data(base64Encoded: fields[2]), [UInt8](blob) == hostKey else { continue }
            for pattern in first.split(separator: ",").map(String.init) {
                if pattern.hasPrefix("|") {
                    hashed += 1
                } else if !pattern.hasPrefix("!"), !pattern.contains(where: { "*?".contains($0) }) {
                    let name = Self.unbracketed(pattern)
                    if !names.contains(name) { names.append(name) }
                }
            }
        }
        return (names, hashed)
    }

    /// `[host]:port` as `host:port`; anything else unchanged.
    static func unbracketed(_ pattern: String) -> String {
        guard pattern.hasPrefix("["), let close = pattern.firstIndex(of: "]") else { return pattern }
        return String(pattern[pattern.index(after: pattern.startIndex)..<close]) + pattern[pattern.index(after: close)...]
    }
}
