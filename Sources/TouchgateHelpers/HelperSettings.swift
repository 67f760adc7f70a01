public import FoundationEssentials
public import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// What the helpers need to know once: which item holds which SSH key's or gpg key's
/// passphrase, and which pinentry to fall back on. Not secret (names only); kept in
/// `$XDG_CONFIG_HOME/touchgate/helpers.json` (`~/.config/touchgate/helpers.json`),
/// private to its owner.
public struct HelperSettings: Codable, Sendable, Equatable {
    /// One SSH key: prompts that match `pattern` are answered with `item`.
    public struct KeyMapping: Codable, Sendable, Equatable {
        /// A key file path, key comment or any part of the prompt; `*`, `?` and `[…]` as in the shell.
        public var pattern: String
        /// The item holding the key's passphrase.
        public var item: String

        /// A mapping.
        public init(pattern: String, item: String) {
            self.pattern = pattern
            self.item = item
        }
    }

    /// `touchgate askpass`: SSH key prompts to items.
    public var askpass: [KeyMapping] = []
    /// `pinentry-touchgate`: keygrips (40 hex digits, upper case) to items.
    public var pinentryKeys: [String: String] = [:]
    /// `pinentry-touchgate`: the pinentry that asks when the vault has no passphrase for the key.
    public var pinentryFallback: String?

    /// No mappings.
    public init() {}

    private enum CodingKeys: String, CodingKey {
        case askpass
        case pinentryKeys = "pinentry-keys"
        case pinentryFallback = "pinentry-fallback"
    }

    /// Where the settings live for `environment`.
    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base: String
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            base = config
        } else {
            base = (environment["HOME"]
                ?? FileManager.default.homeDirectoryForCurrentUser.withUnsafeFileSystemRepresentation { String(cString: $0!) })
                + "/.config"
        }
        return base + "/touchgate/helpers.json"
    }

    /// The settings at `path`; none when the file does not exist.
    /// - Throws: ``ServiceError`` (data error) when the file cannot be read or parsed.
    public static func load(from path: String = path()) throws(ServiceError) -> HelperSettings {
        guard FileManager.default.fileExists(atPath: path) else { return HelperSettings() }
        do {
            return try JSONDecoder().decode(HelperSettings.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ServiceError(.dataError, "cannot read the helper settings in \(path): \(error). "
                               + "Fix or delete the file, then set the mappings again")
        }
    }

    /// Writes the settings to `path` (directory 0700, file 0600, replaced atomically).
    public func save(to path: String = path()) throws(ServiceError) {
        let directory = PathText.deletingLastComponent(of: path)
        do {
            try PrivateFiles.makeDirectory(directory)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let temporary = path + ".new"
            let data = try encoder.encode(self)
            unlink(temporary)  // a stale one from an interrupted save
            try data.withUnsafeBytes { try PrivateFiles.create(temporary, bytes: $0) }
            guard rename(temporary, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            throw ServiceError(.dataError, "cannot write the helper settings to \(path): \(error)")
        }
    }

    /// Loads the settings at `path`, lets `change` edit them and saves the result, holding
    /// an exclusive lock (`flock` on `helpers.json.lock` beside it) from the load to the
    /// save: two commands mapping keys at once both keep their mapping. Nothing is written
    /// when `change` throws.
    public static func update<T>(at path: String = path(),
                                 _ change: (inout HelperSettings) throws(ServiceError) -> T) throws(ServiceError) -> T {
        let directory = PathText.deletingLastComponent(of: path)
        let lockPath = path + ".lock"
        do {
            try PrivateFiles.makeDirectory(directory)
        } catch {
            throw ServiceError(.dataError, "cannot make \(directory) for the helper settings: \(error)")
        }
        do {
            return try PrivateFiles.whileLocking(lockPath) { () throws(ServiceError) -> T in
                var settings = try load(from: path)
                let result = try change(&settings)
                try settings.save(to: path)
                return result
            }
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.dataError, "cannot lock \(lockPath) to change the helper settings: \(error)")
        }
    }

    /// Answers SSH prompts that mention `pattern` with `item`, replacing an earlier mapping
    /// of the same pattern.
    public mutating func mapSSHKey(pattern: String, to item: String) {
        askpass.removeAll { $0.pattern == pattern }
        askpass.append(KeyMapping(pattern: pattern, item: item))
    }

    /// Forgets the mapping of `pattern`.
    /// - Throws: ``ServiceError`` `not-found` when there is none.
    public mutating func unmapSSHKey(pattern: String) throws(ServiceError) {
        let before = askpass.count
        askpass.removeAll { $0.pattern == pattern }
        guard askpass.count < before else {
            throw ServiceError(.notFound, "no mapping for '\(StoredText.escaped(pattern))'; see touchgate askpass list")
        }
    }

    /// Answers the passphrase of the gpg key `keygrip` (any case) with `item`.
    /// - Throws: ``ServiceError`` `usage` when `keygrip` is not 40 hex digits.
    @discardableResult
    public mutating func mapGPGKey(_ keygrip: String, to item: String) throws(ServiceError) -> String {
        guard let grip = Self.canonicalKeygrip(keygrip) else {
            throw ServiceError(.usage, "'\(StoredText.escaped(keygrip))' is not a keygrip (40 hex digits); see gpg "
                               + "--list-secret-keys --with-keygrip")
        }
        pinentryKeys[grip] = item
        return grip
    }

    /// Forgets the mapping of the gpg key `keygrip` (any case).
    /// - Throws: ``ServiceError`` `not-found` when there is none.
    public mutating func unmapGPGKey(_ keygrip: String) throws(ServiceError) {
        let grip = Self.canonicalKeygrip(keygrip) ?? keygrip
        guard pinentryKeys.removeValue(forKey: grip) != nil else {
            throw ServiceError(.notFound, "no mapping for \(StoredText.escaped(grip)); see touchgate pinentry list")
        }
    }

    /// The item mapped to an SSH prompt: the longest matching pattern wins.
    public func askpassItem(for prompt: String) -> String? {
        askpass.filter { Self.matches($0.pattern, prompt) }.max { $0.pattern.count < $1.pattern.count }?.item
    }

    /// Whether `pattern` matches anywhere in `text` (shell wildcards allowed).
    static func matches(_ pattern: String, _ text: String) -> Bool {
        fnmatch("*" + pattern + "*", text, 0) == 0
    }

    /// `keygrip` in the form the settings keep: upper-case hex, or nil when it is not 40 hex digits.
    public static func canonicalKeygrip(_ keygrip: String) -> String? {
        let upper = keygrip.uppercased()
        guard upper.utf8.count == 40, upper.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) })
        else { return nil }
        return upper
    }
}
