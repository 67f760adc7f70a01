import FoundationEssentials
import TouchgateBasics
import TouchgateCrypto
import TouchgatePolicy

/// Where the Secret Service's objects live on the bus, and which object a path names.
enum SecretServicePath {
    static let root = "/org/freedesktop/secrets"
    static let defaultAlias = "default"
    /// The default collection's name (gnome-keyring's too).
    static let defaultCollection = "login"

    /// What a path names.
    enum Target: Equatable {
        case service
        case collection(String)
        case item(collection: String, id: String)
        case session(String)
        case prompt(String)
        case none
    }

    static func target(of path: String) -> Target {
        if path == root { return .service }
        guard path.hasPrefix(root + "/") else { return .none }
        let parts = path.dropFirst(root.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        switch (parts.first, parts.count) {
        case ("collection", 2): return .collection(parts[1])
        case ("collection", 3): return .item(collection: parts[1], id: parts[2])
        case ("aliases", 2) where parts[1] == defaultAlias: return .collection(defaultCollection)
        case ("aliases", 3) where parts[1] == defaultAlias: return .item(collection: defaultCollection, id: parts[2])
        case ("session", 2): return .session(parts[1])
        case ("prompt", 2): return .prompt(parts[1])
        default: return .none
        }
    }

    static func collection(_ name: String) -> String { root + "/collection/" + name }
    static func item(_ collection: String, _ name: String) -> String { Self.collection(collection) + "/" + itemID(name) }
    static func session(_ id: String) -> String { root + "/session/" + id }
    static func prompt(_ id: String) -> String { root + "/prompt/" + id }

    /// An item's path element: from its vault name, so it is the same in every run and
    /// names nothing (`i` and 16 hex digits of its SHA-256).
    static func itemID(_ name: String) -> String {
        "i" + Hex.encode(Array(SHA256.digest(Array(name.utf8)).prefix(8)))
    }

    /// A collection name for a label: letters, digits and `_` only (what a path element may
    /// hold), lowercase; `collection` when nothing is left.
    static func collectionName(forLabel label: String) -> String {
        let kept = label.lowercased().unicodeScalars.map { scalar -> Character in
            (scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))) ? Character(scalar) : "_"
        }
        let name = String(kept.prefix(64)).trimming { $0 == "_" }
        return name.isEmpty ? "collection" : name
    }
}

/// The D-Bus interfaces' names.
enum SecretInterface {
    static let service = "org.freedesktop.Secret.Service"
    static let collection = "org.freedesktop.Secret.Collection"
    static let item = "org.freedesktop.Secret.Item"
    static let session = "org.freedesktop.Secret.Session"
    static let prompt = "org.freedesktop.Secret.Prompt"
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"

    static let itemLabel = "org.freedesktop.Secret.Item.Label"
    static let itemAttributes = "org.freedesktop.Secret.Item.Attributes"
    static let collectionLabel = "org.freedesktop.Secret.Collection.Label"

    /// Each method's argument signature, by interface and member: a call with other
    /// arguments is refused before anything is read.
    static let signatures: [String: [String: String]] = [
        service: ["OpenSession": "sv", "CreateCollection": "a{sv}s", "SearchItems": "a{ss}", "Unlock": "ao",
                  "Lock": "ao", "GetSecrets": "aoo", "ReadAlias": "s", "SetAlias": "so"],
        collection: ["Delete": "", "SearchItems": "a{ss}", "CreateItem": "a{sv}(oayays)b"],
        item: ["Delete": "", "GetSecret": "o", "SetSecret": "(oayays)"],
        session: ["Close": ""],
        prompt: ["Prompt": "s", "Dismiss": ""],
        properties: ["Get": "ss", "GetAll": "s", "Set": "ssv"],
        introspectable: ["Introspect": ""],
    ]

    /// The interfaces an object of `target` has (beside Properties and Introspectable).
    static func interface(of target: SecretServicePath.Target) -> String? {
        switch target {
        case .service: service
        case .collection: collection
        case .item: item
        case .session: session
        case .prompt: prompt
        case .none: nil
        }
    }

    /// What `Introspect` answers for an object with `interface` (its methods and
    /// properties, for tools such as `gdbus introspect`).
    static func introspection(of interface: String) -> String {
        let methods = (signatures[interface] ?? [:]).keys.sorted().map { "<method name=\"\($0)\"/>" }.joined()
        return """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" \
            "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node><interface name="\(interface)">\(methods)</interface>\
            <interface name="\(properties)"/><interface name="\(introspectable)"/></node>
            """
    }
}
