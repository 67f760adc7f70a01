public import FoundationEssentials

/// One lookup attribute of a Secret Service item: a name and a value, both plain strings
/// matched exactly. Kept as a list of pairs on the wire, whose keys are converted to kebab
/// case (a dictionary's keys would be converted too).
public struct SecretAttribute: Codable, Sendable, Equatable, Hashable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// What the Secret Service shows of an item beside its value: the collection it is in,
/// its label and lookup attributes, the content type of its value, and the programs
/// allowed for good to read it without a touch of their own (`touchgate secret allow`).
/// Stored with the item and authenticated with it; never a secret.
public struct ItemDetails: Codable, Sendable, Equatable {
    /// The collection's name (`login` for the default one).
    public var collection: String
    /// What a person sees the item as.
    public var label: String
    /// How programs find it again, sorted by name.
    public var attributes: [SecretAttribute]
    /// The value's MIME type, as the storing program gave it (`text/plain`).
    public var contentType: String
    /// Executables allowed for good, as absolute paths, sorted.
    public var allowed: [String]

    public init(collection: String, label: String, attributes: [SecretAttribute], contentType: String,
                allowed: [String] = []) {
        self.collection = collection
        self.label = label
        self.attributes = attributes.sorted { ($0.name, $0.value) < ($1.name, $1.value) }
        self.contentType = contentType
        self.allowed = allowed.sorted()
    }

    /// Whether every attribute of `query` is one of this item's (an empty query matches all).
    public func matches(_ query: [SecretAttribute]) -> Bool {
        query.allSatisfy { wanted in attributes.contains(wanted) }
    }
}

/// A Secret Service item as a search shows it to one application: never its value.
public struct SecretServiceItemReport: Codable, Sendable, Equatable {
    /// The vault item's name (what `touchgate secret get` and `secret allow` take).
    public var name: String
    public var details: ItemDetails
    /// Its policy in string form.
    public var policy: String
    public var created: Date
    public var modified: Date
    /// Whether the application that searched may read it now without a touch: the vault
    /// is unlocked, and the application was allowed for good or approved by a touch within
    /// the reuse window.
    public var unlocked: Bool

    public init(name: String, details: ItemDetails, policy: String, created: Date, modified: Date, unlocked: Bool) {
        self.name = name
        self.details = details
        self.policy = policy
        self.created = created
        self.modified = modified
        self.unlocked = unlocked
    }
}

/// What a Secret Service search found, and whether the vault is locked (then no item is
/// readable, and the collections show as locked).
public struct SecretServiceSearchReport: Codable, Sendable, Equatable {
    public var locked: Bool
    public var items: [SecretServiceItemReport]
    public init(locked: Bool, items: [SecretServiceItemReport]) {
        self.locked = locked
        self.items = items
    }
}

/// A program that asks for an item through a door that cannot vouch for it the way the
/// kernel vouches for a socket's peer: its executable (from `/proc/PID/exe` of the D-Bus
/// sender's pid) and a description of its process chain for the audit trail.
public struct ApplicationIdentity: Codable, Sendable, Equatable {
    /// The absolute path of its executable.
    public var executable: String
    /// `pid 41 /usr/bin/secret-tool, parent 40 /usr/bin/bash`: for records, never a key.
    public var chain: String
    /// Why the process cannot be taken for the program at ``executable`` (it exec'd another
    /// program since it connected, it does not hold its own connection alone, it runs in
    /// another mount or user namespace than the session, the user can rewrite the program),
    /// as the door found at this message; nil when nothing speaks against it. A doubted
    /// program is never approved and never remembered: every read asks, and says why.
    public var doubt: String?

    public init(executable: String, chain: String, doubt: String? = nil) {
        self.executable = executable
        self.chain = chain
        self.doubt = doubt
    }

    /// Whether an approval or `secret allow` of ``executable`` may stand for this process.
    public var mayBeApproved: Bool { doubt == nil }
}

/// The result of `secret allow`: the item and who may now read it without a touch of
/// its own.
public struct AllowReport: Codable, Sendable, Equatable {
    public var name: String
    public var allowed: [String]
    public init(name: String, allowed: [String]) {
        self.name = name
        self.allowed = allowed
    }
}

/// What `touchgate import secret-service` did: the items copied into the vault (their vault
/// names), and those skipped because the vault already holds an item of the same
/// collection and attributes.
public struct SecretServiceImportReport: Codable, Sendable, Equatable {
    public var imported: [String]
    public var skipped: [String]
    public init(imported: [String], skipped: [String]) {
        self.imported = imported
        self.skipped = skipped
    }
}

/// The values of several items in one secret: each as a 4-byte big-endian length and its
/// bytes, in the order of the items' details. How an import's values travel as the one
/// `secret-value` a request may carry.
public enum PackedValues {
    /// The most bytes of one value (the vault's items are small; this bounds the unpacking).
    public static let maximumValueBytes = 1 << 20

    /// Packs `values` into one secret.
    public static func pack(_ values: [SecretBytes]) -> SecretBytes {
        let total = values.reduce(0) { $0 + 4 + $1.count }
        return SecretBytes.make(count: total) { buffer in
            var offset = 0
            for value in values {
                let count = UInt32(value.count)
                for shift in [24, 16, 8, 0] {
                    buffer[offset] = UInt8(truncatingIfNeeded: count >> UInt32(shift))
                    offset += 1
                }
                value.withUnsafeBytes { bytes in
                    for byte in bytes {
                        buffer[offset] = byte
                        offset += 1
                    }
                }
            }
        }
    }

    /// The `count` values packed in `secret`.
    /// - Throws: ``ServiceError`` (usage) when it does not hold exactly `count` values.
    public static func unpack(_ secret: SecretBytes, count: Int) throws(ServiceError) -> [SecretBytes] {
        let values: [SecretBytes]? = secret.withUnsafeBytes { bytes in
            var values: [SecretBytes] = []
            var offset = 0
            while offset < bytes.count {
                guard offset + 4 <= bytes.count else { return nil }
                let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
                offset += 4
                guard length <= maximumValueBytes, offset + length <= bytes.count else { return nil }
                values.append(SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])))
                offset += length
            }
            return values
        }
        guard let values, values.count == count else {
            throw ServiceError(.usage, "the values given do not match the \(count) items to import; nothing was imported")
        }
        return values
    }
}

/// What became of starting the Secret Service on a bus.
public enum SecretServiceStart: Sendable, Equatable {
    /// It owns `org.freedesktop.secrets` and serves.
    case serving
    /// Another program owns the name: what it is (`gnome-keyring-daemon (pid 812)`, or a
    /// program no keyring is known as, said as such).
    case taken(by: String)

    /// The sentence a door shows for a name that is taken, saying what to do.
    public var refusal: String? {
        guard case .taken(let owner) = self else { return nil }
        return "org.freedesktop.secrets on this bus is owned by \(owner); the Secret Service is not served here "
            + "(stop it, or keep it and run touchgate secret-service disable)"
    }
}
