import FoundationEssentials
public import TouchgateAPI
import TouchgateTerminal

/// What git says in a credential request (git-credential(1)): `key=value` lines up to an
/// empty line or the end. Keys Touchgate does not use are ignored, as the protocol asks;
/// the password, when git sends one, stays apart in guarded memory.
public struct GitCredentialRequest: Sendable {
    /// `https`, `http`, …
    public var `protocol`: String?
    /// The host, with `:port` when git gives one.
    public var host: String?
    /// The repository path (only with `credential.useHttpPath`).
    public var path: String?
    /// The user name.
    public var username: String?
    /// The password, for `store`.
    public var password: SecretBytes?

    /// Parses the attribute lines of `input` (bytes of standard input).
    /// - Throws: ``ServiceError`` (usage) for a line that is not `key=value` or holds a NUL byte.
    public init(parsing input: SecretBytes) throws(ServiceError) {
        let parsed: [(String, Range<Int>)]? = input.withUnsafeBytes { bytes in
            var found: [(String, Range<Int>)] = []
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
                var line = start..<end
                if line.count > 0 && bytes[line.upperBound - 1] == 0x0D { line = line.lowerBound..<(line.upperBound - 1) }
                if line.isEmpty { break }
                guard let equals = bytes[line].firstIndex(of: 0x3D), !bytes[line].contains(0) else { return nil }
                let key = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[line.lowerBound..<equals]), as: UTF8.self)
                found.append((key, (equals + 1)..<line.upperBound))
                start = end + 1
            }
            return found
        }
        guard let lines = parsed else {
            throw ServiceError(.usage, "git sent a credential line that is not key=value; nothing was done")
        }
        for (key, range) in lines {
            if key == "password" {
                password = input.withUnsafeBytes { SecretBytes(copying: $0[range]) }
                continue
            }
            let value = input.withUnsafeBytes { String(decoding: UnsafeRawBufferPointer(rebasing: $0[range]), as: UTF8.self) }
            switch key {
            case "protocol": self.protocol = value
            case "host": host = value
            case "path": path = value
            case "username": username = value
            case "url":
                if let url = URLComponents(string: value) {
                    self.protocol = url.scheme ?? self.protocol
                    host = url.host.map { host in url.port.map { "\(host):\($0)" } ?? host } ?? host
                    if !url.path.isEmpty { path = String(url.path.drop { $0 == "/" }) }
                    username = url.user ?? username
                }
            default: continue  // unknown attributes are ignored (git-credential(1))
            }
        }
    }

    /// The item that holds the credential: `git:PROTOCOL://HOST[/PATH]`.
    /// - Throws: ``ServiceError`` (usage) when git gave no protocol or host.
    public func itemName() throws(ServiceError) -> String {
        guard let scheme = self.protocol, !scheme.isEmpty, let host, !host.isEmpty else {
            throw ServiceError(.usage, "git gave no protocol and host; nothing to look up")
        }
        let name = "git:\(scheme)://\(host)" + (path.map { $0.isEmpty ? "" : "/" + $0 } ?? "")
        if let problem = StoredText.problem(withName: name, what: "git credential item") { throw ServiceError(.usage, problem) }
        return name
    }
}

/// A released git credential: the user name and the password. The item's value holds
/// both as git's own lines, `username=…` and `password=…`.
public struct GitCredential: Sendable {
    /// The user name.
    public let username: String
    /// The password, in guarded memory.
    public let password: SecretBytes

    /// Reads the stored form.
    /// - Throws: ``ServiceError`` (data error) when `stored` is not `username=` and `password=` lines.
    init(stored: SecretBytes, item: String) throws(ServiceError) {
        let parsed = try? GitCredentialRequest(parsing: stored)
        guard let parsed, let username = parsed.username, let password = parsed.password else {
            throw ServiceError(.dataError, "the item '\(StoredText.escaped(item))' does not hold username= and "
                               + "password= lines; remove it (touchgate secret rm) and let git store it again")
        }
        self.username = username
        self.password = password
    }

    /// `username=…\npassword=…\n` in guarded memory.
    /// - Throws: ``ServiceError`` (usage) when either holds a newline or NUL (git never sends those).
    static func storedForm(username: String, password: SecretBytes) throws(ServiceError) -> SecretBytes {
        let bad: (UInt8) -> Bool = { $0 == 0x0A || $0 == 0 }
        guard !username.utf8.contains(where: bad), !password.withUnsafeBytes({ $0.contains(where: bad) }) else {
            throw ServiceError(.usage, "the username or password holds a newline or NUL byte; nothing was stored")
        }
        return lines(username: username, password: password)
    }

    /// What `get` prints: `username=…` and `password=…` lines.
    public var output: SecretBytes { Self.lines(username: username, password: password) }

    private static func lines(username: String, password: SecretBytes) -> SecretBytes {
        let head = Array("username=\(username)\npassword=".utf8)
        return SecretBytes.make(count: head.count + password.count + 1) { buffer in
            buffer.copyBytes(from: head)
            password.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[head.count...]).copyMemory(from: $0) }
            buffer[buffer.count - 1] = 0x0A
        }
    }
}
